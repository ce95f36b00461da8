package dev.crucible.torch.train;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.HostTensor;
import dev.crucible.api.model.DType;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.LoraLinear;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.ResidualHook;
import dev.crucible.api.model.RotaryEmbedding;
import dev.crucible.api.model.Step;
import dev.crucible.api.model.Transformer;
import dev.crucible.api.model.TransformerWeights;
import dev.crucible.api.model.WeightSource;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.api.train.LoraSettings;
import dev.crucible.api.train.TrainerState;
import dev.crucible.api.train.TrainingBatch;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.api.train.TrainingSession;
import dev.crucible.torch.TorchOps;
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
    private final Transformer transformer;
    private final RotaryEmbedding rotary;
    private final List<Tensor> owned;
    private final List<Nf4Weight> quantized;
    private final Tensor nf4Table;
    private final Map<String, LoraLinear> adapted;
    private final Map<String, Tensor> weightsByName;
    private final List<Parameter> parameters;
    private final AdamW optimizer;
    private Tensor cosTable;
    private Tensor sinTable;
    private int tableLength;
    private boolean closed;

    private TorchTrainingSession(Builder built) {
        this.request = built.request;
        this.ops = built.ops;
        this.inferenceOps = built.inferenceOps;
        this.trainingView = built.trainingView;
        this.evaluationView = new TrainingOps(inferenceOps, 0);
        this.transformer = built.transformer;
        this.rotary = new RotaryEmbedding(request.config());
        this.owned = built.owned;
        this.quantized = built.quantized;
        this.nf4Table = built.nf4Table;
        this.adapted = built.adapted;
        this.weightsByName = built.weightsByName;
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
        try (ModelRunner runner = new ModelRunner(evaluationView, transformer, false)) {
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
        weightsByName.forEach((name, tensor) -> out.put(name, host(name, tensor)));
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
        List<int[]> tokens = batch.tokens();
        List<int[]> labels = batch.labels();
        int rows = tokens.size();
        int length = tokens.stream().mapToInt(row -> row.length).max().orElseThrow();
        ensureTables(length);
        long[] ids = new long[rows * length];
        long[] positions = new long[rows * length];
        long[] padding = new long[rows];
        long[] targets = new long[rows * length];
        float[] weights = new float[rows * length];
        for (int row = 0; row < rows; row++) {
            int[] sequence = tokens.get(row);
            int[] rowLabels = labels.get(row);
            int pad = length - sequence.length;
            padding[row] = pad;
            for (int i = 0; i < sequence.length; i++) {
                int slot = row * length + pad + i;
                ids[slot] = sequence[i];
                positions[slot] = i;
                // Position i predicts token i + 1 (Hugging Face's shift of labels).
                if (i + 1 < sequence.length && rowLabels[i + 1] != TrainingBatch.IGNORE) {
                    targets[slot] = rowLabels[i + 1];
                    weights[slot] = 1f;
                }
            }
        }
        long[] slots = new long[length];
        for (int i = 0; i < length; i++) {
            slots[i] = i;
        }
        Tensor slotTensor = view.constant(slots, length);
        Step step = new Step(view.constant(ids, rows, length), view.constant(positions, rows, length), slotTensor,
                slotTensor, view.constant(padding, rows), cosTable, sinTable, true);
        Tensor logits = transformer.forward(view, step, null, ResidualHook.NONE);
        org.bytedeco.pytorch.Tensor logProbabilities = ((TorchTensor) logits).handle()
                .to(org.bytedeco.pytorch.global.torch.ScalarType.Float).log_softmax(-1);
        org.bytedeco.pytorch.Tensor chosen = logProbabilities
                .gather(2, ((TorchTensor) view.constant(targets, rows, length, 1)).handle()).reshape(rows, length);
        return chosen.mul(((TorchTensor) view.constant(weights, rows, length)).handle()).sum().neg();
    }

    private void ensureTables(int length) {
        if (length <= tableLength) {
            return;
        }
        int size = Math.max(length, Math.max(2 * tableLength, 256));
        releaseTables();
        DType dtype = transformer.computeDtype();
        try (TensorScope scope = ops.openScope()) {
            int width = rotary.headDim();
            cosTable = ops.retain(ops.cast(ops.constant(rotary.cosTable(size), size, width), dtype));
            sinTable = ops.retain(ops.cast(ops.constant(rotary.sinTable(size), size, width), dtype));
        }
        tableLength = size;
    }

    private void releaseTables() {
        if (cosTable != null) {
            ops.release(cosTable);
            ops.release(sinTable);
            cosTable = null;
            sinTable = null;
            tableLength = 0;
        }
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
        releaseTables();
        for (LoraLinear linear : adapted.values()) {
            linear.removeAdapter();
        }
        Builder.release(ops, owned, quantized, nf4Table);
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
        private final List<Nf4Weight> quantized = new ArrayList<>();
        private final Map<String, LoraLinear> adapted = new LinkedHashMap<>();
        private final Map<String, Tensor> weightsByName = new LinkedHashMap<>();
        private final List<Parameter> parameters = new ArrayList<>();
        private Tensor nf4Table;
        private Transformer transformer;

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
            if (method == TrainingMethod.QLORA) {
                nf4Table = Nf4.table(ops);
            }
            Checkpoint checkpoint = request.checkpoint();
            ModelConfig config = request.config();
            WeightSource source = new WeightSource() {
                @Override
                public boolean contains(String name) {
                    return checkpoint.contains(name);
                }

                @Override
                public long[] shape(String name) {
                    return checkpoint.info(name).shape();
                }

                @Override
                public Tensor load(String name) {
                    return placeWeight(name, checkpoint.tensor(name), weightDtype);
                }
            };
            TransformerWeights weights = TransformerWeights.bind(config, source);
            transformer = new Transformer(config, weights);
            if (method == TrainingMethod.FULL) {
                weightsByName.forEach((name, tensor) -> addParameter(name, tensor));
            } else {
                attachAdapters(weights, request.lora());
            }
        }

        private Tensor placeWeight(String name, HostTensor host, DType dtype) {
            if (!host.dtype().isFloatingPoint()) {
                throw new UserInputException("checkpoint tensor " + name + " is " + host.dtype()
                        + "; quantized or integer checkpoints cannot be fine-tuned here");
            }
            // One scope per weight: the float32 staging copy is freed before the next weight is placed.
            try (TensorScope scope = ops.openScope()) {
                Tensor dense = ops.constant(host.toFloatArray(), host.shape());
                if (request.method() == TrainingMethod.QLORA && name.endsWith("_proj.weight")) {
                    Nf4Weight weight = Nf4.quantize(ops, dense, dtype, (TorchTensor) nf4Table);
                    quantized.add(weight);
                    return weight;
                }
                Tensor placed = ops.retain(ops.cast(dense, dtype));
                owned.add(placed);
                weightsByName.put(name, placed);
                return placed;
            }
        }

        private void attachAdapters(TransformerWeights weights, LoraSettings lora) {
            Map<String, LoraLinear> linears = new LinkedHashMap<>();
            weights.linears().forEach(linear -> linears.put(linear.module(), linear));
            for (String module : lora.modules()) {
                LoraLinear linear = linears.get(module);
                if (linear == null) {
                    throw new IllegalArgumentException("no adaptable projection named '" + module + "'");
                }
                int in = Math.toIntExact(linear.inFeatures());
                int out = Math.toIntExact(linear.outFeatures());
                Tensor a;
                Tensor b;
                try (TensorScope scope = ops.openScope()) {
                    a = ops.retain(ops.constant(kaimingUniform(module, lora.rank(), in), lora.rank(), in));
                    owned.add(a);
                    b = ops.retain(ops.zeros(DType.F32, out, lora.rank()));
                    owned.add(b);
                }
                linear.setAdapter(a, b, lora.scale());
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
            for (LoraLinear linear : adapted.values()) {
                linear.removeAdapter();
            }
            release(ops, owned, quantized, nf4Table);
            ops.close();
            inferenceOps.close();
        }

        static void release(TorchOps ops, List<Tensor> owned, List<Nf4Weight> quantized, Tensor table) {
            owned.forEach(ops::release);
            owned.clear();
            quantized.forEach(weight -> weight.release(ops));
            quantized.clear();
            if (table != null) {
                ops.release(table);
            }
        }
    }
}
