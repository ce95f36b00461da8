package dev.crucible.api.model;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.quant.QuantizedHostTensor;
import dev.crucible.api.quant.WeightCodec;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A model placed on a device, the same on every backend: the checkpoint's weights bound to the one
 * {@link Transformer}, the adapters beside them, the rotary tables, and what owns and frees all of it. A backend
 * supplies only a {@link Placement} (its ops, compute dtype and how a host tensor reaches the device); inference,
 * training and merging build on this class rather than each placing the checkpoint again.
 *
 * <p>Not thread-safe for changes: adapters and tables change on the caller's thread, between requests; batches
 * running at once only read.
 */
public final class PlacedModel implements AutoCloseable {

    /** Rotary tables start long enough for short prompts and grow by doubling (see {@link #ensureTables}). */
    private static final int INITIAL_TABLE_LENGTH = 256;

    private final ModelConfig config;
    private final Placement placement;
    private final TensorOps ops;
    private final Transformer transformer;
    private final Map<String, Tensor> placed;
    private final Quantized quantized;
    private final Map<String, LoraLinear> linears = new LinkedHashMap<>();
    /** Each projection's decoder layer: its adapter is placed, zeroed and merged where the layer is. */
    private final Map<String, Integer> layerOf = new LinkedHashMap<>();
    /** The model's rotary embeddings: one, or with a local base a second for the sliding layers (Gemma 3). */
    private final List<RotaryEmbedding> rotaries;
    private Tensor cosTable;
    private Tensor sinTable;
    private int tableLength;
    private boolean closed;
    private boolean foldAdapters;

    private PlacedModel(ModelConfig config, Placement placement, TransformerWeights weights,
                        Map<String, Tensor> placed, Quantized quantized) {
        this.config = config;
        this.placement = placement;
        this.ops = placement.ops();
        this.transformer = new Transformer(config, weights);
        this.placed = Collections.unmodifiableMap(placed);
        this.quantized = quantized;
        this.rotaries = config.options().localRopeTheta().isPresent()
                ? List.of(new RotaryEmbedding(config), new RotaryEmbedding(config.rotaryDims(),
                        config.options().localRopeTheta().getAsDouble(), new RopeScaling.None()))
                : List.of(new RotaryEmbedding(config));
        for (int layer = 0; layer < weights.layers().size(); layer++) {
            for (LoraLinear linear : weights.layers().get(layer).linears()) {
                linears.put(linear.module(), linear);
                layerOf.put(linear.module(), layer);
            }
        }
    }

    /**
     * Copies every weight {@code config} needs from {@code checkpoint} onto the device, once each, in the
     * placement's compute dtype: a layer's weights where {@link Placement#forLayer} puts the layer, the embedding
     * with {@code placement} itself, the final norm and head with {@link Placement#forHead}. The checkpoint must
     * stay open until this returns; the model holds copies only.
     */
    public static PlacedModel place(ModelConfig config, Checkpoint checkpoint, Placement placement) {
        TensorOps ops = placement.ops();
        DType dtype = placement.computeDtype();
        Map<String, Tensor> placed = new LinkedHashMap<>();
        Quantized quantized = new Quantized(placement);
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
            public Tensor load(Parameter parameter) {
                String name = parameter.name();
                Tensor tensor = ops.retain(partOf(placement, parameter).toDevice(floatingPoint(checkpoint, name),
                        dtype));
                placed.put(name, tensor);
                return tensor;
            }

            /**
             * A weight the folder stores in the format the placement keeps it in is placed as stored; any other is
             * quantized from its values (a stored quantized weight's values are what it dequantizes to).
             */
            @Override
            public QuantizedTensor loadQuantized(Parameter parameter) {
                return loadQuantized(parameter, parameter.name());
            }

            @Override
            public QuantizedTensor loadQuantized(Parameter parameter, String valuesFrom) {
                WeightFormat format = placement.format(parameter.name());
                if (format instanceof WeightFormat.Dense) {
                    return null;
                }
                Placement part = partOf(placement, parameter);
                java.util.Optional<QuantizedHostTensor> stored = checkpoint.quantized(valuesFrom)
                        .filter(parts -> parts.format().equals(format));
                return stored.isPresent() ? quantized.place(part, stored.get(), dtype)
                        : quantized.place(part, floatingPoint(checkpoint, valuesFrom), format, dtype);
            }
        };
        PlacedModel model = null;
        try (TensorScope scope = ops.openScope()) {
            model = new PlacedModel(config, placement, TransformerWeights.bind(config, source), placed, quantized);
            model.ensureTables(INITIAL_TABLE_LENGTH);
            return model;
        } catch (RuntimeException | Error e) {
            if (model != null) {
                model.close();
            } else {
                placed.values().forEach(ops::release);
                quantized.release();
            }
            throw e;
        }
    }

    /** Where {@code parameter} goes: its layer's placement, the embedding's ({@code placement}) or the head's. */
    private static Placement partOf(Placement placement, Parameter parameter) {
        if (parameter.layer() >= 0) {
            return placement.forLayer(parameter.layer());
        }
        return parameter.role() == dev.crucible.api.model.layout.Role.EMBEDDING ? placement : placement.forHead();
    }

    private static HostTensor floatingPoint(Checkpoint checkpoint, String name) {
        HostTensor host = checkpoint.tensor(name);
        if (!host.dtype().isFloatingPoint()) {
            throw new UserInputException("checkpoint tensor " + name + " is " + host.dtype()
                    + "; quantized or integer weights are not supported by this loader");
        }
        return host;
    }

    public ModelConfig config() {
        return config;
    }

    /** The dtype weights are placed in and activations computed in. */
    public DType dtype() {
        return placement.computeDtype();
    }

    /** The ops that own this model's tensors. */
    public TensorOps ops() {
        return ops;
    }

    /** The model as its family lays it out. */
    public ModelLayout layout() {
        return transformer.weights().layout();
    }

    public Transformer transformer() {
        checkOpen();
        return transformer;
    }

    /**
     * Every tensor placed from the checkpoint by its checkpoint name, in the order placed (a tied output head is
     * the embedding, once, under the embedding's name): what full fine-tuning trains.
     */
    public Map<String, Tensor> placedTensors() {
        return placed;
    }

    /** The formats of the projection weights kept quantized, in the order first placed; empty when all are dense. */
    public java.util.SequencedSet<WeightFormat> quantizedFormats() {
        java.util.SequencedSet<WeightFormat> formats = new java.util.LinkedHashSet<>();
        for (LoraLinear linear : linears.values()) {
            if (linear.quantized() != null) {
                formats.add(linear.quantized().format());
            }
        }
        if (transformer.weights().quantizedHead() != null) {
            formats.add(transformer.weights().quantizedHead().format());
        }
        return formats;
    }

    /** Whether the output head's product reads a quantized weight (with tied embeddings, a copy of the table). */
    public boolean quantizedHead() {
        return transformer.weights().quantizedHead() != null;
    }

    /**
     * Bytes of every projection as placed, biases included: dense weights in their dtype, quantized ones with all
     * their parts. What a decode step streams for its projections ({@link ModelCost#linearBytes}).
     */
    public long projectionBytes() {
        long bytes = 0;
        for (LoraLinear linear : linears.values()) {
            bytes += linear.quantized() != null ? bytes(linear.quantized()) : bytes(linear.weight());
            bytes += linear.bias() == null ? 0 : bytes(linear.bias());
        }
        return bytes;
    }

    private static long bytes(Tensor tensor) {
        return tensor.dtype().byteSize() * elements(tensor.shape());
    }

    private static long bytes(QuantizedTensor weight) {
        return weight.format().storedBytes(weight.shape());
    }

    /** Bytes of the quantized head with all its parts, or 0 when the head is dense. */
    public long quantizedHeadBytes() {
        QuantizedTensor head = transformer.weights().quantizedHead();
        return head == null ? 0 : bytes(head);
    }

    /** How many projections are kept quantized. */
    public int quantizedProjections() {
        return (int) linears.values().stream().filter(linear -> linear.quantized() != null).count();
    }

    /** Bytes of every weight as placed: dense tensors in their dtype, quantized ones with all their parts. */
    public long weightBytes() {
        long bytes = 0;
        for (Tensor tensor : placed.values()) {
            bytes += bytes(tensor);
        }
        for (LoraLinear linear : linears.values()) {
            if (linear.quantized() != null) {
                bytes += bytes(linear.quantized());
            }
        }
        return bytes + quantizedHeadBytes();
    }

    private static long elements(long[] shape) {
        long count = 1;
        for (long extent : shape) {
            count *= extent;
        }
        return count;
    }

    /** Every projection an adapter can attach to, layer by layer, attention before MLP. */
    public List<LinearModule> linearModules() {
        return linears.values().stream()
                .map(linear -> new LinearModule(linear.module(), linear.inFeatures(), linear.outFeatures()))
                .toList();
    }

    /** The projection named as PEFT targets it, e.g. {@code model.layers.0.self_attn.q_proj}. */
    public LoraLinear linear(String module) {
        LoraLinear linear = linears.get(module);
        if (linear == null) {
            throw new IllegalArgumentException("no adaptable projection named '" + module + "'; names look like "
                    + linears.keySet().iterator().next());
        }
        return linear;
    }

    /**
     * Places {@code factors} beside {@code module}'s base weight in the placement's adapter dtype, replacing (and
     * freeing) any adapter there; the base weight is untouched.
     */
    public void setAdapter(String module, LoraFactors factors) {
        checkOpen();
        LoraLinear linear = linear(module);
        DType dtype = placement.adapterDtype();
        Placement layer = placement.forLayer(layerOf.get(module));
        try (TensorScope scope = ops.openScope()) {
            Tensor a = ops.retain(layer.toDevice(factors.a(), dtype));
            Tensor b = ops.retain(layer.toDevice(factors.b(), dtype));
            attach(linear, a, b, factors.scale());
        }
        fold(linear, layer.ops());
    }

    /**
     * Attaches device factors {@code a [r, in]} and {@code b [out, r]}, retained by the caller, which this model
     * now owns and frees (training's trainable factors).
     */
    public void attachAdapter(String module, Tensor a, Tensor b, double scale) {
        checkOpen();
        attach(linear(module), a, b, scale);
    }

    private void attach(LoraLinear linear, Tensor a, Tensor b, double scale) {
        LoraLinear.Adapter previous;
        try {
            previous = linear.setAdapter(a, b, scale);
        } catch (RuntimeException e) {
            ops.release(a);
            ops.release(b);
            throw e;
        }
        release(previous);
        unfold(linear);
    }

    /**
     * From now on, an adapter {@linkplain #setAdapter set from host factors} beside a dense float32 weight is folded
     * into a copy of the weight, {@code W + scale·B·A}, which the projection computes with instead of the adapter's
     * three ops ({@link LoraLinear#setFolded}); a zeroed adapter computes with the base weight itself. For a backend
     * whose ops cost more than their arithmetic on a small model: on the demo model the adapters of an abliteration
     * trial were 24 of a decode step's ~140 ops. It costs a copy of each edited weight, so a backend asks for it
     * for small models only. Float32 only: folded into a narrower weight, an edit would be rounded to the weight's
     * resolution, where the adapter keeps it in its own. Training's adapters ({@link #attachAdapter}) change with
     * every step and are never folded.
     */
    public void foldAdapters() {
        checkOpen();
        foldAdapters = true;
    }

    /** Folds {@code linear}'s adapter into a copy of its weight where {@link #foldAdapters} asks for it. */
    private void fold(LoraLinear linear, TensorOps at) {
        LoraLinear.Adapter adapter = linear.adapter();
        Tensor weight = linear.weight();
        if (!foldAdapters || adapter == null || weight == null || weight.dtype() != DType.F32
                || adapter.a().dtype() != DType.F32 || adapter.b().dtype() != DType.F32) {
            return;
        }
        try (TensorScope scope = at.openScope()) {
            Tensor delta = at.matmul(adapter.b(), adapter.a());
            if (adapter.scale() != 1.0) {
                delta = at.scale(delta, adapter.scale());
            }
            releaseFolded(linear, linear.setFolded(at.retain(at.add(weight, delta))));
        }
    }

    /** Back to the weight and adapter as they are (after the adapter changed, or to compute it unfolded). */
    private void unfold(LoraLinear linear) {
        releaseFolded(linear, linear.setFolded(null));
    }

    private void releaseFolded(LoraLinear linear, Tensor folded) {
        if (folded != null && folded != linear.weight()) {
            ops.release(folded);
        }
    }

    /**
     * Sets every adapter's B to zero, so the model computes exactly its base weights while the adapters stay in
     * place (an abliteration trial's reset). B is replaced by zeros rather than written in place, which every
     * backend can do; nothing else holds it.
     */
    public void zeroAdapters() {
        checkOpen();
        try (TensorScope scope = ops.openScope()) {
            for (LoraLinear linear : linears.values()) {
                LoraLinear.Adapter adapter = linear.adapter();
                if (adapter != null) {
                    TensorOps at = ops.forLayer(layerOf.get(linear.module()));
                    Tensor zero = at.retain(at.zeros(adapter.b().dtype(), adapter.b().shape()));
                    linear.setAdapter(adapter.a(), zero, adapter.scale());
                    ops.release(adapter.b());
                    unfold(linear);
                    if (foldAdapters && linear.weight() != null) {
                        linear.setFolded(linear.weight()); // B is zero: the base weight alone, exactly
                    }
                }
            }
        }
    }

    /** Drops every adapter and frees its memory. */
    public void removeAdapters() {
        checkOpen();
        for (LoraLinear linear : linears.values()) {
            release(linear.removeAdapter());
            unfold(linear);
        }
    }

    /**
     * {@code W + scale·B·A} for every projection with an adapter, computed in float32 from {@code base}'s stored
     * weight (not the device copy, which may be in a narrower dtype) and rounded once to the stored dtype, on the
     * host under the base tensor's name.
     */
    public MergedWeights merge(Checkpoint base) {
        checkOpen();
        Arena arena = Arena.ofShared();
        Map<String, HostTensor> merged = new LinkedHashMap<>();
        try {
            for (LoraLinear linear : linears.values()) {
                LoraLinear.Adapter adapter = linear.adapter();
                if (adapter == null) {
                    continue;
                }
                String name = linear.module() + ".weight";
                HostTensor stored = base.tensor(name);
                // On the adapter's device: a model split by layers merges each layer where it lives.
                Placement layer = placement.forLayer(layerOf.get(linear.module()));
                TensorOps at = layer.ops();
                try (TensorScope scope = ops.openScope()) {
                    double scale = adapter.scale();
                    List<Tensor> inputs = List.of(layer.toDevice(stored, DType.F32), adapter.a(), adapter.b());
                    Tensor sum = at.step("merge " + scale + " " + stored.dtype(), inputs, in -> {
                        Tensor delta = at.matmul(at.cast(in.get(2), DType.F32), at.cast(in.get(1), DType.F32));
                        return List.of(at.cast(at.add(in.get(0), at.scale(delta, scale)), stored.dtype()));
                    }).getFirst();
                    merged.put(name, HostTensor.fromFloats(name, stored.dtype(), stored.shape(), ops.readFloats(sum),
                            arena));
                }
            }
            return new MergedWeights(merged, arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Makes the rotary tables cover at least {@code positions}, regrown by doubling so that long runs rebuild them
     * rarely. Call it before batches that may run at once start: they only read the tables.
     */
    public void ensureTables(int positions) {
        checkOpen();
        if (positions <= tableLength) {
            return;
        }
        int length = Math.max(positions, Math.max(2 * tableLength, INITIAL_TABLE_LENGTH));
        DType dtype = dtype();
        try (TensorScope scope = ops.openScope()) {
            int width = rotaries.stream().mapToInt(RotaryEmbedding::headDim).sum();
            Tensor cos = ops.retain(ops.cast(ops.constant(sideBySide(length, true), length, width), dtype));
            Tensor sin = ops.retain(ops.cast(ops.constant(sideBySide(length, false), length, width), dtype));
            releaseTables();
            cosTable = cos;
            sinTable = sin;
        }
        tableLength = length;
    }

    /** Each position's row of every rotary table, the tables side by side (table 0 first). */
    private float[] sideBySide(int length, boolean cosine) {
        if (rotaries.size() == 1) {
            RotaryEmbedding only = rotaries.getFirst();
            return cosine ? only.cosTable(length) : only.sinTable(length);
        }
        int width = rotaries.stream().mapToInt(RotaryEmbedding::headDim).sum();
        float[] rows = new float[Math.multiplyExact(length, width)];
        int offset = 0;
        for (RotaryEmbedding rotary : rotaries) {
            int part = rotary.headDim();
            float[] table = cosine ? rotary.cosTable(length) : rotary.sinTable(length);
            for (int position = 0; position < length; position++) {
                System.arraycopy(table, position * part, rows, position * width + offset, part);
            }
            offset += part;
        }
        return rows;
    }

    /** {@code [P, headDim]} cos of every position below {@link #ensureTables}' length, in the compute dtype. */
    public Tensor cosTable() {
        return cosTable;
    }

    /** {@code [P, headDim]} sin of every position below {@link #ensureTables}' length, in the compute dtype. */
    public Tensor sinTable() {
        return sinTable;
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

    private void release(LoraLinear.Adapter adapter) {
        if (adapter != null) {
            ops.release(adapter.a());
            ops.release(adapter.b());
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this model was closed");
        }
    }

    /** Frees every tensor it owns: adapters, tables and weights. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (LoraLinear linear : linears.values()) {
            release(linear.removeAdapter());
            unfold(linear);
        }
        releaseTables();
        List<Tensor> weights = new ArrayList<>(placed.values());
        weights.forEach(ops::release);
        quantized.release();
    }

    /**
     * The weights kept quantized: each one's parts and, once per format, the codebook they share; all encoded on
     * the host by the format's {@link WeightCodec} and placed part by part.
     */
    private static final class Quantized {
        private final Placement placement;
        private final List<QuantizedTensor> weights = new ArrayList<>();
        /** One codebook per format and device: a layer's products read the one beside its weights. */
        private final Map<CodebookKey, Tensor> codebooks = new LinkedHashMap<>();

        private record CodebookKey(WeightFormat format, TensorOps ops) { }

        Quantized(Placement placement) {
            this.placement = placement;
        }

        QuantizedTensor place(Placement part, HostTensor host, WeightFormat format, DType dtype) {
            QuantizedHostTensor parts = WeightCodec.of(format).encode(host);
            if (host.data().isNative() && host.data().isMapped()) {
                // The checkpoint's pages were read once, to quantize; drop them from this process's resident
                // memory as the full-precision placement does (they fault back in from the page cache if read).
                host.data().unload();
            }
            return place(part, parts, dtype);
        }

        QuantizedTensor place(Placement part, QuantizedHostTensor parts, DType dtype) {
            TensorOps ops = part.ops();
            WeightFormat format = parts.format();
            WeightCodec codec = WeightCodec.of(format);
            Tensor codebook = codec.codebook().map(table -> codebooks.computeIfAbsent(new CodebookKey(format, ops),
                    key -> ops.retain(part.toDevice(table, table.dtype())))).orElse(null);
            Tensor data = ops.retain(part.toDevice(parts.data(), parts.data().dtype()));
            Tensor scales = ops.retain(part.toDevice(parts.scales(), parts.scales().dtype()));
            Tensor zeroPoints = parts.zeroPoints() == null ? null
                    : ops.retain(part.toDevice(parts.zeroPoints(), parts.zeroPoints().dtype()));
            QuantizedTensor weight = new QuantizedTensor(format, parts.shape(), dtype, data, scales, zeroPoints, codebook);
            weights.add(weight);
            return weight;
        }

        void release() {
            TensorOps ops = placement.ops();
            weights.forEach(weight -> weight.parts().forEach(ops::release));
            weights.clear();
            codebooks.values().forEach(ops::release);
            codebooks.clear();
        }
    }

    @Override
    public String toString() {
        return "PlacedModel[" + config.architecture().modelType() + ", " + dtype() + ", " + Objects.toString(ops) + "]";
    }
}
