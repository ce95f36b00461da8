package dev.crucible.runner.finetune;

import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.train.TrainingMethod;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Everything {@code runner finetune} was asked to do.
 *
 * @param method       empty for {@code --method auto}
 * @param dtype        {@code --dtype}: the frozen base's compute dtype, {@code auto} for the backend's policy
 * @param evalData     held-out rows: eval loss at the end, and with {@code refusalMarkers} the refusal check
 * @param resume       the folder a stopped run left its state in ({@code --out} itself for a plain {@code --resume},
 *                     or where a failed save put it); empty for a fresh run
 */
public record FinetuneSettings(
        String model, Path data, Path out, DeviceRequest device, OptionalInt threads,
        Optional<TrainingMethod> method, String dtype, int rank, double alpha, double dropout, String targetModules,
        int epochs, int microBatch, int gradAccum, boolean groupByLength, int maxLength, ExampleEncoder.Overlong overlong, ExampleEncoder.LossOn lossOn,
        double learningRate, double warmupRatio, double weightDecay, double maxGradNorm, long seed,
        Optional<Path> evalData, Optional<Path> refusalMarkers, int evalMaxNewTokens, Optional<Path> resume, boolean force,
        QuantizationConfig quantization) {

    /** Without {@code --quantization}: the method's own base. */
    public FinetuneSettings(String model, Path data, Path out, DeviceRequest device, OptionalInt threads,
                            Optional<TrainingMethod> method, String dtype, int rank, double alpha, double dropout,
                            String targetModules, int epochs, int microBatch, int gradAccum, boolean groupByLength,
                            int maxLength, ExampleEncoder.Overlong overlong, ExampleEncoder.LossOn lossOn,
                            double learningRate, double warmupRatio, double weightDecay, double maxGradNorm, long seed,
                            Optional<Path> evalData, Optional<Path> refusalMarkers, int evalMaxNewTokens,
                            Optional<Path> resume, boolean force) {
        this(model, data, out, device, threads, method, dtype, rank, alpha, dropout, targetModules, epochs, microBatch,
                gradAccum, groupByLength, maxLength, overlong, lossOn, learningRate, warmupRatio, weightDecay,
                maxGradNorm, seed, evalData, refusalMarkers, evalMaxNewTokens, resume, force, QuantizationConfig.NONE);
    }

    public FinetuneSettings {
        java.util.Objects.requireNonNull(quantization, "quantization is null");
        if (quantization.enabled() && method.isPresent() && method.get() == TrainingMethod.FULL) {
            throw new UserInputException("--method full trains every weight in float32; --quantization "
                    + quantization.method().userName() + " needs --method auto, lora or qlora (adapters on a quantized base)");
        }
        if (rank < 1) {
            throw new UserInputException("--rank must be at least 1, got " + rank);
        }
        if (!(alpha > 0)) {
            throw new UserInputException("--alpha must be positive, got " + alpha);
        }
        if (!(dropout >= 0 && dropout < 1)) {
            throw new UserInputException("--dropout must be in [0, 1), got " + dropout);
        }
        if (!(weightDecay >= 0)) {
            throw new UserInputException("--weight-decay must be >= 0, got " + weightDecay);
        }
        if (refusalMarkers.isPresent() && evalData.isEmpty()) {
            throw new UserInputException("--refusal-markers needs --eval-data (the rows whose replies are checked)");
        }
        if (evalMaxNewTokens < 1) {
            throw new UserInputException("--eval-max-new-tokens must be at least 1, got " + evalMaxNewTokens);
        }
    }

    /**
     * What a resumed run must share with the stopped one for its saved state to apply (everything that changes
     * the data order, the schedule or the parameters' shapes).
     */
    Map<String, Object> runIdentity() {
        Map<String, Object> identity = new LinkedHashMap<>();
        identity.put("method", method.map(TrainingMethod::userName).orElse("auto"));
        identity.put("dtype", dtype);
        identity.put("rank", rank);
        identity.put("alpha", alpha);
        identity.put("dropout", dropout);
        identity.put("target_modules", targetModules);
        identity.put("epochs", epochs);
        identity.put("micro_batch", microBatch);
        identity.put("grad_accum", gradAccum);
        identity.put("group_by_length", groupByLength);
        identity.put("max_len", maxLength);
        identity.put("overlong", overlong.name());
        identity.put("loss_on", lossOn.name());
        identity.put("lr", learningRate);
        identity.put("warmup_ratio", warmupRatio);
        identity.put("weight_decay", weightDecay);
        identity.put("max_grad_norm", maxGradNorm);
        identity.put("seed", seed);
        if (quantization.enabled()) {
            identity.put("quantization", quantization.describe());
        }
        return identity;
    }
}
