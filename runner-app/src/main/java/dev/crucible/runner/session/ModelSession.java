package dev.crucible.runner.session;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.Ceilings;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ForwardResult;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.model.StopCondition;
import dev.crucible.api.model.TokenListener;
import dev.crucible.api.model.TransformerWeights;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.quant.WeightCodec;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.Host;
import dev.crucible.runner.backends.ActiveBackend;
import dev.crucible.runner.backends.ProbedBackend;
import dev.crucible.runner.text.ModelTokenizer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * One model, loaded once, on the backend {@code --device} chose: its folder, config, open checkpoint (kept open
 * for merges and exports), tokenizer and device copy. Every command that runs a model starts here, so resolution,
 * environment set-up, dtype policy and loading happen in one place and in the right order.
 */
public final class ModelSession implements AutoCloseable {
    private final ModelLocator.Located location;
    private final ModelConfig config;
    private final Checkpoint checkpoint;
    private final ModelTokenizer tokenizer;
    private final ActiveBackend<?, ?> backend;
    private final ActiveBackend.LoadedModel model;
    private final OptionalInt threads;
    private final QuantizationConfig quantization;

    private ModelSession(ModelLocator.Located location, ModelConfig config, Checkpoint checkpoint, ModelTokenizer tokenizer,
                         ActiveBackend<?, ?> backend, ActiveBackend.LoadedModel model, OptionalInt threads,
                         QuantizationConfig quantization) {
        this.location = location;
        this.config = config;
        this.checkpoint = checkpoint;
        this.tokenizer = tokenizer;
        this.backend = backend;
        this.model = model;
        this.threads = threads;
        this.quantization = quantization;
    }

    /**
     * Resolves the backend (exit 2 when the device is unavailable), reads the model's config, sets up the backend's
     * environment, then loads the model. Order matters: the environment is chosen before any native runtime is
     * touched (resolving and reading the config are plain Java).
     *
     * @param dtypeName    {@code auto} (the backend's policy for the checkpoint's dtype), float32, bfloat16, float16
     * @param quantization which projection weights are kept quantized, and how (each quantized as it loads)
     */
    public static ModelSession open(Host host, DeviceRequest device, OptionalInt threads, String modelSpec, String dtypeName,
                                    QuantizationConfig quantization) {
        ProbedBackend chosen = host.resolve(device);
        return open(host, chosen, BackendOptions.withEnvironment(device, host.environment()), threads,
                locateModel(host, modelSpec), dtypeName, quantization);
    }

    /** {@link #open(Host, DeviceRequest, OptionalInt, String, String, QuantizationConfig)} for a model located already. */
    public static ModelSession open(Host host, DeviceRequest device, OptionalInt threads, ModelLocator.Located location,
                                    String dtypeName, QuantizationConfig quantization) {
        return open(host, host.resolve(device), BackendOptions.withEnvironment(device, host.environment()), threads, location,
                dtypeName, quantization);
    }

    private static ModelSession open(Host host, ProbedBackend chosen, DeviceRequest device, OptionalInt threads,
                                     ModelLocator.Located location, String dtypeName, QuantizationConfig quantization) {
        Path dir = location.folder();
        ModelConfig config = ModelConfig.read(dir);
        ActiveBackend<?, ?> backend = ActiveBackend.setUp(chosen, device, threads);
        ModelTokenizer tokenizer = ModelTokenizer.load(dir).notesTo(host::noteOnce);
        Checkpoint checkpoint = null;
        try {
            checkpoint = Checkpoint.open(dir);
            boolean auto = dtypeName.equalsIgnoreCase("auto");
            DType dtype = auto ? backend.chooseDtype(config.dtype()) : parseDtype(dtypeName);
            // A folder stored quantized (runner quantize) runs as stored unless another quantization is asked for.
            QuantizationConfig kept = quantization.enabled() ? quantization : checkpoint.storedQuantization();
            ActiveBackend.LoadedModel model = backend.shard(new ShardRequest(config, checkpoint, dtype, kept, auto));
            return new ModelSession(location, config, checkpoint, tokenizer, backend, model, threads, kept);
        } catch (RuntimeException e) {
            tokenizer.close();
            if (checkpoint != null) {
                checkpoint.close();
            }
            throw e;
        }
    }

    /**
     * Everything about a model that can be checked without loading it — the folder (or hub id), config.json, the
     * tokenizer, the chat template when {@code chat} needs one, and every tensor the config implies by name and
     * shape — so that a command reading several models refuses a bad one before it spends time on any.
     *
     * @return where the model is, and its config
     */
    public static Checked check(Host host, String modelSpec, boolean chat) {
        ModelLocator.Located location = locateModel(host, modelSpec);
        Path dir = location.folder();
        ModelConfig config = ModelConfig.read(dir);
        try (ModelTokenizer tokenizer = ModelTokenizer.load(dir); Checkpoint checkpoint = Checkpoint.open(dir)) {
            if (chat) {
                tokenizer.checkChatTemplate();
            }
            TransformerWeights.check(config, checkpoint);
        }
        return new Checked(location, config);
    }

    /** A model that passed {@link #check}. */
    public record Checked(ModelLocator.Located location, ModelConfig config) { }

    /** A local folder as it is; otherwise {@code org/name[@revision]} through the Hugging Face cache (and hub). */
    public static Path resolveModel(Host host, String spec) {
        return locateModel(host, spec).folder();
    }

    /** {@link #resolveModel} that also keeps whether the folder is local or a Hub model's snapshot. */
    public static ModelLocator.Located locateModel(Host host, String spec) {
        ModelLocator locator = ModelLocator.of(host.environment().env(), Path.of(System.getProperty("user.home")),
                (file, done, total) -> { });
        return locator.locate(spec);
    }

    public static DType parseDtype(String text) {
        return switch (text.toLowerCase(java.util.Locale.ROOT)) {
            case "float32", "fp32", "f32" -> DType.F32;
            case "bfloat16", "bf16" -> DType.BF16;
            case "float16", "fp16", "f16", "half" -> DType.F16;
            default -> throw new UserInputException("--dtype '" + text + "' is not one of auto, float32, bfloat16, float16");
        };
    }

    /** Tokens that end a generation: the tokenizer's eos and every eos id of config.json. */
    public Set<Integer> stopTokens() {
        Set<Integer> stops = new LinkedHashSet<>(tokenizer.eosIds());
        stops.addAll(config.eosTokenIds());
        return stops;
    }

    /** A prompt as ids: chat-rendered ({@code [system?, user]} plus the generation prompt) or raw with BOS as the tokenizer adds it. */
    public int[] encodePrompt(String prompt, boolean chat, Optional<String> system) {
        int[] ids = chat ? tokenizer.encodeChat(system, prompt) : tokenizer.encode(prompt);
        if (ids.length == 0) {
            throw new UserInputException("the prompt '" + prompt + "' encodes to no tokens (the tokenizer adds no BOS); give some text");
        }
        return ids;
    }

    /** What fits this model's context with {@code newTokens} generated after each prompt (set by {@code flag}). */
    public ContextBudget budget(int newTokens, String flag, PromptTruncation truncation) {
        return new ContextBudget(tokenizer, config, newTokens, flag, truncation);
    }

    /** Batched greedy generation; batch results equal one-at-a-time results. */
    public List<Generation> generate(List<int[]> prompts, int maxNewTokens, int batchSize) {
        return generate(prompts, maxNewTokens, batchSize, StopCondition.NONE);
    }

    /** The same, each row also ending once {@code settled} says its tokens so far are all that is needed. */
    public List<Generation> generate(List<int[]> prompts, int maxNewTokens, int batchSize, StopCondition settled) {
        DecodeRequest request = new DecodeRequest(prompts, maxNewTokens, stopTokens(), tokenizer.padId(), batchSize,
                TokenListener.NONE, settled);
        return decode(request).generations();
    }

    /** Greedy generation on the session's backend. */
    public DecodeResult decode(DecodeRequest request) {
        return model.decode(request);
    }

    /** Residuals, final norm and logits at each prompt's last token, on the session's backend. */
    public ForwardResult forward(ForwardRequest request) {
        return model.forward(request);
    }

    /** The model's current adapters merged into the checkpoint's weights, on the host. */
    public MergedWeights merge() {
        return model.merge(checkpoint);
    }

    /** This machine's ceilings as the model's ops run, measured now. */
    public Ceilings measureCeilings(Duration budget) {
        return model.measureCeilings(budget);
    }

    /** How the projection weights are kept on the device. */
    public QuantizationConfig quantization() {
        return quantization;
    }

    /**
     * What a run prints first about a quantized model: the scheme and what stays in full precision, the weights'
     * bytes, and the kernel each quantized format's products run on. Empty when every weight is dense.
     */
    public List<String> quantizationReport() {
        if (!quantization.enabled()) {
            return List.of();
        }
        PlacedModel placed = model.model().placed();
        List<String> lines = new java.util.ArrayList<>();
        String head = !placed.quantizedHead() ? ""
                : placed.layout().tiedHead() ? " and the output head (a quantized copy of the tied embedding table,"
                        + " which lookups read dense)" : " and the output head";
        lines.add("quantization: " + quantization.describe() + "; " + placed.quantizedProjections() + " of "
                + placed.linearModules().size() + " projections quantized" + head + ", weights "
                + OutputLocation.bytes(placed.weightBytes()) + " on the device");
        for (String kernel : model.model().quantizedKernels()) {
            lines.add("kernels: " + kernel);
        }
        return lines;
    }

    /**
     * The float32 values of the projection weight {@code name} as the model computes with them: the stored weight, or
     * for a quantized one, what its codes dequantize to (an edit computed from the weight starts from those rows).
     */
    public float[] weightValues(String name) {
        float[] stored = checkpoint.tensor(name).toFloatArray();
        WeightFormat format = quantization.formatFor(name, model.model().dtype());
        if (format instanceof WeightFormat.Dense
                || checkpoint.quantized(name).filter(parts -> parts.format().equals(format)).isPresent()) {
            return stored;
        }
        WeightCodec codec = WeightCodec.of(format);
        return codec.decode(codec.encode(name, stored, checkpoint.info(name).shape()));
    }

    public Path modelDir() {
        return location.folder();
    }

    /** Where the model came from, for files that name their base model (adapters). */
    public ModelLocator.Located location() {
        return location;
    }

    /** The compute threads the caller asked for, or empty (the backend's choice). */
    public OptionalInt threads() {
        return threads;
    }

    public ModelConfig config() {
        return config;
    }

    public Checkpoint checkpoint() {
        return checkpoint;
    }

    public ModelTokenizer tokenizer() {
        return tokenizer;
    }

    /** The backend the session runs on, set up. */
    public ActiveBackend<?, ?> backend() {
        return backend;
    }

    public DeviceModel model() {
        return model.model();
    }

    @Override
    public void close() {
        model.close();
        checkpoint.close();
        tokenizer.close();
    }
}
