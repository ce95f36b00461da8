package dev.crucible.torch.train;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.LoraLinear;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PaddedBatch;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.model.ResidualHook;
import dev.crucible.api.model.ShapePolicy;
import dev.crucible.api.model.Step;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.api.train.LoraSettings;
import dev.crucible.api.train.TrainerState;
import dev.crucible.api.train.TrainingBatch;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.api.train.TrainingSession;
import dev.crucible.torch.TorchOps;
import dev.crucible.torch.TorchPlacement;
import dev.crucible.torch.TorchTensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.global.torch;

/**
 * Training on one libtorch device: the checkpoint placed as the method needs it, the one {@link Transformer} run
 * with autograd, masked cross-entropy, and {@link AdamW} on the device.
 *
 * <p>Placement per method: LoRA keeps the frozen base in the request's dtype and adds float32 factors (A with
 * PEFT's Kaiming-uniform initialization, B zero, so training starts from the base model exactly); QLoRA stores
 * every projection weight as NF4 blocks and dequantizes per matmul; full training places every weight in float32
 * and trains all of them. Adapter initialization and dropout follow from the request's seed, and CPU kernels are
 * deterministic for a fixed thread count, so the same run gives the same bytes.
 *
 * <p>Batches are left-padded like generation batches (positions start at 0 on each row's first real token, and
 * no real token attends to padding), so a row's loss does not depend on what it is batched with.
 */
public final class TorchTrainingSession implements TrainingSession {

    private static final int DEFAULT_DECODE_BATCH = 8;
    private static final ValueLayout.OfFloat LITTLE_ENDIAN_FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final TrainingRequest request;
    private final TorchOps ops;
    private final TorchOps inferenceOps;
    private final TrainingOps trainingView;
    private final TrainingOps evaluationView;
    private final PlacedModel model;
    private final List<Tensor> owned;
    private final Map<String, LoraLinear> adapted;
    private final List<Parameter> parameters;
    private final AdamW optimizer;
    private boolean closed;

    private TorchTrainingSession(Builder built) {
        this.request = built.request;
        this.ops = built.ops;
        this.inferenceOps = built.inferenceOps;
        this.trainingView = built.trainingView;
        this.evaluationView = new TrainingOps(inferenceOps, 0);
        this.model = built.model;
        this.owned = built.owned;
        this.adapted = built.adapted;
        this.parameters = built.parameters;
        this.optimizer = new AdamW(request.optimizer(), parameters);
    }

    /** Places {@code request.checkpoint()} on {@code device} for {@code request.method()}. */
    public static TorchTrainingSession start(TrainingRequest request, String device) {
        Builder builder = new Builder(request, device);
        try {
            builder.place();
            return new TorchTrainingSession(builder);
        } catch (RuntimeException | Error e) {
            builder.releaseAll();
            throw e;
        }
    }

    @Override
    public TrainingMethod method() {
        return request.method();
    }

    @Override
    public long trainableParameters() {
        return parameters.stream().mapToLong(p -> p.value().numel()).sum();
    }

    @Override
    public double accumulate(TrainingBatch batch, double lossScale) {
        checkOpen();
        try (TensorScope scope = ops.openScope()) {
            org.bytedeco.pytorch.Tensor loss = loss(trainingView, batch);
            double value = loss.item_double();
            if (lossScale != 0 && batch.labelledTokens() > 0) {
                loss.mul(new org.bytedeco.pytorch.Scalar(lossScale)).backward();
            }
            return value;
        }
    }

    @Override
    public double evaluate(TrainingBatch batch) {
        checkOpen();
        try (TensorScope scope = inferenceOps.openScope()) {
            return loss(evaluationView, batch).item_double();
        }
    }

    @Override
    public double step(double learningRate) {
        checkOpen();
        if (!(learningRate >= 0) || Double.isInfinite(learningRate)) {
            throw new IllegalArgumentException("learning rate must be finite and >= 0, got " + learningRate);
        }
        return optimizer.step(learningRate);
    }

    @Override
    public long completedSteps() {
        return optimizer.steps();
    }

    @Override
    public DecodeResult decode(DecodeRequest decodeRequest) {
        checkOpen();
        int batchSize = decodeRequest.batchSize() > 0 ? decodeRequest.batchSize() : DEFAULT_DECODE_BATCH;
        try (ModelRunner runner = new ModelRunner(evaluationView, model, ShapePolicy.EXACT)) {
            return runner.decode(decodeRequest, batchSize);
        }
    }

    @Override
    public Map<String, LoraFactors> adapters() {
        checkOpen();
        if (!request.method().trainsAdapters()) {
            throw new IllegalStateException("full training has no adapters; read weights()");
        }
        Map<String, LoraFactors> out = new LinkedHashMap<>();
        for (Map.Entry<String, LoraLinear> entry : adapted.entrySet()) {
            LoraLinear.Adapter adapter = entry.getValue().adapter();
            out.put(entry.getKey(), new LoraFactors(host(entry.getKey() + ".lora_A.weight", adapter.a()),
                    host(entry.getKey() + ".lora_B.weight", adapter.b()), adapter.scale()));
        }
        return out;
    }

    @Override
    public Map<String, HostTensor> weights() {
        checkOpen();
        if (request.method().trainsAdapters()) {
            throw new IllegalStateException(request.method().userName() + " trains adapters; read adapters()");
        }
        Map<String, HostTensor> out = new LinkedHashMap<>();
        model.placedTensors().forEach((name, tensor) -> out.put(name, host(name, tensor)));
        return out;
    }

    @Override
    public TrainerState state() {
        checkOpen();
        Map<String, HostTensor> tensors = new LinkedHashMap<>();
        for (Parameter parameter : parameters) {
            tensors.put(TrainerState.PARAMETER + parameter.name(),
                    host(parameter.name(), new TorchTensor(parameter.value())));
            tensors.put(TrainerState.FIRST_MOMENT + parameter.name(),
                    host(parameter.name(), new TorchTensor(parameter.firstMoment())));
            tensors.put(TrainerState.SECOND_MOMENT + parameter.name(),
                    host(parameter.name(), new TorchTensor(parameter.secondMoment())));
        }
        return new TrainerState(optimizer.steps(), tensors);
    }

    @Override
    public void restore(TrainerState state) {
        checkOpen();
        try (PointerScope scope = new PointerScope()) {
            new NoGradGuard();
            for (Parameter parameter : parameters) {
                copyInto(parameter.value(), state, TrainerState.PARAMETER + parameter.name());
                copyInto(parameter.firstMoment(), state, TrainerState.FIRST_MOMENT + parameter.name());
                copyInto(parameter.secondMoment(), state, TrainerState.SECOND_MOMENT + parameter.name());
            }
        }
        optimizer.restoreSteps(state.completedSteps());
    }

    private void copyInto(org.bytedeco.pytorch.Tensor target, TrainerState state, String key) {
        HostTensor saved = state.tensors().get(key);
        if (saved == null) {
            throw new UserInputException("the saved trainer state has no " + key
                    + "; it was written for another model or other settings");
        }
        long[] shape = new long[(int) target.dim()];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = target.size(i);
        }
        if (!Arrays.equals(shape, saved.shape())) {
            throw new UserInputException("the saved trainer state's " + key + " has shape "
                    + Arrays.toString(saved.shape()) + ", this run's " + Arrays.toString(shape)
                    + "; resume with the settings of the stopped run");
        }
        target.copy_(((TorchTensor) ops.constant(saved.toFloatArray(), shape)).handle());
    }

    /** The summed cross-entropy of {@code batch}'s labelled positions, as a float32 scalar on the device. */
    private org.bytedeco.pytorch.Tensor loss(TrainingOps view, TrainingBatch batch) {
        List<int[]> labels = batch.labels();
        // Padding takes token 0: no real position attends to it and its positions carry no loss.
        PaddedBatch padded = PaddedBatch.leftPad(batch.tokens(), 0);
        int rows = padded.rows();
        int length = padded.length();
        model.ensureTables(length);
        long[] padding = padded.padding();
        long[] targets = new long[rows * length];
        float[] weights = new float[rows * length];
        for (int row = 0; row < rows; row++) {
            int[] rowLabels = labels.get(row);
            int pad = (int) padding[row];
            for (int i = 0; i + 1 < rowLabels.length; i++) {
                // Position i predicts token i + 1 (Hugging Face's shift of labels).
                if (rowLabels[i + 1] != TrainingBatch.IGNORE) {
                    int slot = row * length + pad + i;
                    targets[slot] = rowLabels[i + 1];
                    weights[slot] = 1f;
                }
            }
        }
        Step step = padded.wholeBatch(view, model.cosTable(), model.sinTable(), true);
        Tensor logits = model.transformer().forward(view, step, ResidualHook.NONE);
        org.bytedeco.pytorch.Tensor logProbabilities = ((TorchTensor) logits).handle()
                .to(org.bytedeco.pytorch.global.torch.ScalarType.Float).log_softmax(-1);
        org.bytedeco.pytorch.Tensor chosen = logProbabilities
                .gather(2, ((TorchTensor) view.constant(targets, rows, length, 1)).handle()).reshape(rows, length);
        return chosen.mul(((TorchTensor) view.constant(weights, rows, length)).handle()).sum().neg();
    }

    /** A host float32 copy, in a heap byte array (writers take its bytes as they are: little-endian). */
    private HostTensor host(String name, Tensor tensor) {
        float[] values = ops.readFloats(tensor);
        MemorySegment bytes = MemorySegment.ofArray(new byte[4 * values.length]);
        MemorySegment.copy(values, 0, bytes, LITTLE_ENDIAN_FLOAT, 0, values.length);
        return new HostTensor(name, DType.F32, tensor.shape(), bytes);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this training session was closed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        model.close();
        Builder.release(ops, owned);
        ops.close();
        inferenceOps.close();
    }

    /** Placement, kept apart so a failure half-way frees what was placed. */
    private static final class Builder {
        private final TrainingRequest request;
        private final TorchOps ops;
        private final TorchOps inferenceOps;
        private final TrainingOps trainingView;
        private final List<Tensor> owned = new ArrayList<>();
        private final Map<String, LoraLinear> adapted = new LinkedHashMap<>();
        private final List<Parameter> parameters = new ArrayList<>();
        private PlacedModel model;

        Builder(TrainingRequest request, String device) {
            this.request = request;
            this.ops = new TorchOps(device, false);
            this.inferenceOps = new TorchOps(device, true);
            this.trainingView = new TrainingOps(ops, request.lora() == null ? 0 : request.lora().dropout());
        }

        void place() {
            torch.manual_seed(request.seed());
            TrainingMethod method = request.method();
            DType weightDtype = method == TrainingMethod.FULL ? DType.F32 : request.dtype();
            // QLoRA: projection weights quantized (NF4 unless asked otherwise), dequantized per matmul; the trained
            // adapters are attached as device tensors, so the placement's adapter dtype is never asked.
            model = PlacedModel.place(request.config(), request.checkpoint(),
                    new TorchPlacement(ops, weightDtype, request.quantization()));
            if (method == TrainingMethod.FULL) {
                model.placedTensors().forEach(this::addParameter);
            } else {
                attachAdapters(request.lora());
            }
        }

        private void attachAdapters(LoraSettings lora) {
            for (String module : lora.modules()) {
                LoraLinear linear = model.linear(module);
                int in = Math.toIntExact(linear.inFeatures());
                int out = Math.toIntExact(linear.outFeatures());
                Tensor a;
                Tensor b;
                try (TensorScope scope = ops.openScope()) {
                    a = ops.retain(ops.constant(kaimingUniform(module, lora.rank(), in), lora.rank(), in));
                    b = ops.retain(ops.zeros(DType.F32, out, lora.rank()));
                }
                model.attachAdapter(module, a, b, lora.scale());
                adapted.put(module, linear);
                trainingView.addAdapterInput(a);
                addParameter(module + ".lora_A.weight", a);
                addParameter(module + ".lora_B.weight", b);
            }
        }

        /**
         * PEFT's default A: {@code kaiming_uniform_(a=sqrt(5))}, i.e. uniform in ±1/sqrt(in). Drawn from a generator
         * seeded by the run's seed and the module's name, so it does not depend on the device or placement order.
         */
        private float[] kaimingUniform(String module, int rank, int in) {
            SplittableRandom random = new SplittableRandom(request.seed() * 0x9E3779B97F4A7C15L + module.hashCode());
            double bound = 1.0 / Math.sqrt(in);
            float[] values = new float[rank * in];
            for (int i = 0; i < values.length; i++) {
                values[i] = (float) random.nextDouble(-bound, bound);
            }
            return values;
        }

        private void addParameter(String name, Tensor tensor) {
            org.bytedeco.pytorch.Tensor value = ((TorchTensor) tensor).handle();
            value.set_requires_grad(true);
            Tensor first;
            Tensor second;
            try (TensorScope scope = ops.openScope()) {
                first = ops.retain(ops.zeros(DType.F32, tensor.shape()));
                owned.add(first);
                second = ops.retain(ops.zeros(DType.F32, tensor.shape()));
                owned.add(second);
            }
            parameters.add(new Parameter(name, value, ((TorchTensor) first).handle(), ((TorchTensor) second).handle(),
                    tensor.shape().length >= 2));
        }

        void releaseAll() {
            if (model != null) {
                model.close();
            }
            release(ops, owned);
            ops.close();
            inferenceOps.close();
        }

        static void release(TorchOps ops, List<Tensor> owned) {
            owned.forEach(ops::release);
            owned.clear();
        }
    }
}
