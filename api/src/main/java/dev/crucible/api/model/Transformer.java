package dev.crucible.api.model;

import dev.crucible.api.model.BlockWeights.AttentionWeights;
import dev.crucible.api.model.BlockWeights.ConvolutionWeights;
import dev.crucible.api.model.BlockWeights.MixtureWeights;
import dev.crucible.api.model.BlockWeights.MlpWeights;
import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.TensorScope;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

/**
 * The decoder, written once: it composes the blocks of a family's {@link ModelLayout} (attention and the gated MLP
 * today, each on the residual stream with its norms and scale), so the families differ only in their layouts
 * (biases, q/k norms, norm placement, head width, windows, scalars) and rotary scaling. It only calls
 * {@link TensorOps}, so the same code runs eagerly on libtorch and is traced into a static-shape program elsewhere:
 * every shape below follows from the step's input shapes, and nothing reads tensor values.
 *
 * <p>Semantics are transformers' for these architectures: residual blocks normed before (or after) the block,
 * rotate_half RoPE (on all or the leading dimensions of a head, or none) applied after the optional q/k norm,
 * grouped-query attention scaled by the layout's scale, SiLU-gated MLP, final RMSNorm and a linear output head.
 */
public final class Transformer {

    private final ModelConfig config;
    private final TransformerWeights weights;
    /** Every attention window of the layout (0 for full attention): each step builds one mask per window. */
    private final Set<Integer> windows;

    public Transformer(ModelConfig config, TransformerWeights weights) {
        this.config = Objects.requireNonNull(config, "config is null");
        this.weights = Objects.requireNonNull(weights, "weights is null");
        if (weights.layers().size() != config.numLayers()) {
            throw new IllegalArgumentException("weights have " + weights.layers().size() + " layers, config "
                    + config.numLayers());
        }
        this.windows = weights.layout().blocks(Attention.class).stream().map(Attention::window)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    public ModelConfig config() {
        return config;
    }

    public TransformerWeights weights() {
        return weights;
    }

    /** The dtype activations are computed in: the weights'. */
    public DType computeDtype() {
        return weights.embedding().dtype();
    }

    /** What a step with per-layer state computes: its logits and every layer's new state. */
    public record Output(Tensor logits, List<LayerState> states) {
        public Output {
            Objects.requireNonNull(logits, "logits is null");
            states = List.copyOf(states);
        }
    }

    /**
     * Runs one step over its own tokens only ({@code keySlots} equal to {@code querySlots}: a whole sequence, as a
     * forward pass or training takes it) and returns logits {@code [B, T', vocab]} in the compute dtype, {@code T'} =
     * T with {@link Step#allPositions()}, else 1 (the last slot, which in a left-padded batch is every row's last
     * token).
     */
    public Tensor forward(TensorOps ops, Step step, ResidualHook hook) {
        return run(ops, step, null, hook).logits();
    }

    /**
     * Runs one step that reads and writes each layer's {@code states} (keys and values of the earlier steps live
     * there and this step's are written into them) and returns its logits, as above, and the new states. A returned
     * state tensor that is not the one it replaces is retained for the caller, who frees the one replaced
     * ({@link DecodeState#adopt}); an eager backend writes in place and returns the same tensors.
     */
    public Output forward(TensorOps ops, Step step, List<LayerState> states, ResidualHook hook) {
        Objects.requireNonNull(states, "states is null");
        if (states.size() != config.numLayers()) {
            throw new IllegalArgumentException(states.size() + " layer states for " + config.numLayers() + " layers");
        }
        return run(ops, step, states, hook);
    }

    private Output run(TensorOps ops, Step step, List<LayerState> states, ResidualHook hook) {
        long batch = step.tokens().size(0);
        long length = step.tokens().size(1);
        ModelLayout layout = weights.layout();
        Tensor hidden = ops.embedding(weights.embedding(), step.tokens());
        if (layout.embeddingScale() != 1.0) {
            hidden = ops.scale(hidden, layout.embeddingScale());
        }
        hook.residual(0, hidden);
        // [B, 1, T, rotaryDims]: one rotation per token, shared by every head.
        long rotaryDims = step.cosTable().size(1);
        Tensor cos = ops.reshape(ops.embedding(step.cosTable(), step.positions()), batch, 1, length, rotaryDims);
        Tensor sin = ops.reshape(ops.embedding(step.sinTable(), step.positions()), batch, 1, length, rotaryDims);
        Masks masks = Masks.of(ops, step, attentionMask(ops, step, batch, length), windows);

        // Each layer runs in its own scope and only its output outlives it: a layer's intermediates (the MLP's
        // [B, T, intermediate] tensors above all) are freed before the next layer starts, so a long prefill holds one
        // layer's worth of them, not every layer's (measured: a 16 x 49-token batch through a Qwen2.5-0.5B-shaped
        // model peaked at 2.8 GB for 1 GB of weights with one scope for the whole pass). The hook's views of a layer
        // output keep its storage alive on their own. The embedding belongs to the caller's scope; every layer output
        // is retained here and released once the next one exists.
        //
        // A model split by layers over devices (TensorOps#forLayer) runs each layer with its device's ops. Where the
        // device changes, the residual stream crosses once, inside the layer's scope (the copy is freed with it), and
        // what every layer reads of the step (rotary rows, masks, slots) crosses once per device and step, not per
        // layer or op. On one device every ops below is the same and nothing moves.
        int layers = config.numLayers();
        List<LayerState> next = states == null ? List.of() : new ArrayList<>(states);
        LayerInputs inputs = new LayerInputs(ops, cos, sin, masks, step);
        for (int layer = 0; layer < layers; layer++) {
            TensorOps layerOps = ops.forLayer(layer);
            inputs = inputs.on(layerOps);
            Tensor output;
            try (TensorScope scope = layerOps.openScope()) {
                LayerState state = states == null ? null : states.get(layer);
                output = layerOps.retain(decoderLayer(layerOps, layer, layerOps.transfer(hidden), inputs, state, next));
            }
            if (layer > 0) {
                ops.release(hidden);
            }
            hidden = output;
            hook.residual(layer + 1, hidden);
        }
        TensorOps head = ops.forHead();
        // Only the positions the head reads cross to its device (a generation step's last one).
        TensorOps lastLayer = inputs.ops();
        Tensor last = head.transfer(step.allPositions() ? hidden : lastLayer.slice(hidden, 1, length - 1, length));
        Tensor normed = norm(head, last, weights.finalNorm());
        hook.finalNorm(normed);
        Tensor logits = weights.quantizedHead() != null ? head.linear(normed, weights.quantizedHead(), null)
                : head.linear(normed, weights.outputHead(), null);
        if (layout.logitScale() != 1.0) {
            logits = head.scale(logits, layout.logitScale());
        }
        if (layout.logitSoftcap() != 0) {
            double cap = layout.logitSoftcap();
            logits = head.scale(head.tanh(head.scale(logits, 1.0 / cap)), cap);
        }
        if (layers > 0) {
            ops.release(hidden);
        }
        return new Output(logits, next);
    }

    /**
     * What every layer reads of the step besides the residual stream, on the device of {@code ops}: the rotary rows,
     * the masks and the slots. {@link #on} moves them to another device's ops, once.
     */
    private record LayerInputs(TensorOps ops, Tensor cos, Tensor sin, Masks masks, Step step) {

        LayerInputs on(TensorOps target) {
            if (target == ops) {
                return this;
            }
            Map<Integer, Tensor> windowed = new HashMap<>();
            masks.windowed().forEach((window, mask) -> windowed.put(window, target.transfer(mask)));
            Step moved = new Step(step.tokens(), step.positions(), target.transfer(step.querySlots()),
                    target.transfer(step.keySlots()), target.transfer(step.padding()), step.cosTable(),
                    step.sinTable(), step.allPositions());
            return new LayerInputs(target, target.transfer(cos), target.transfer(sin),
                    new Masks(target.transfer(masks.full()), windowed), moved);
        }
    }

    /**
     * The layer's blocks in order, each added to the residual stream after its norm, all with the layer's ops.
     *
     * @param inputs the step's rotary rows, masks and slots where the layer computes
     * @param state the layer's state (its attention's keys and values), or null for a step without state
     * @param next  where the layer's new state goes (at its index), when it has one
     */
    private Tensor decoderLayer(TensorOps ops, int index, Tensor hidden, LayerInputs inputs, LayerState state,
                                List<LayerState> next) {
        Tensor cos = inputs.cos();
        Tensor sin = inputs.sin();
        Masks masks = inputs.masks();
        Step step = inputs.step();
        LayerWeights layer = weights.layers().get(index);
        for (int i = 0; i < layer.blocks().size(); i++) {
            BlockWeights block = layer.blocks().get(i);
            Tensor x = block.preNorm() == null ? hidden : norm(ops, hidden, block.preNorm());
            Tensor y = switch (block) {
                case AttentionWeights attention -> attention(ops, attention, x, cos, sin,
                        masks.forWindow(attention.layout().window()), step, (LayerState.KeyValues) state, next, index);
                case MlpWeights mlp -> mlp(ops, mlp, x);
                case MixtureWeights mixture -> mixture(ops, mixture, x);
                case ConvolutionWeights convolution -> shortConvolution(ops, convolution, x, step,
                        (LayerState.ConvolutionWindow) state, next, index);
            };
            if (block.postNorm() != null) {
                y = norm(ops, y, block.postNorm());
            }
            double scale = layer.layout().blocks().get(i).scale();
            hidden = ops.add(hidden, scale == 1.0 ? y : ops.scale(y, scale));
        }
        return hidden;
    }

    /** {@code down(silu(gate(x)) · up(x))}. */
    private static Tensor gatedMlp(TensorOps ops, LoraLinear gate, LoraLinear up, LoraLinear down, Tensor x) {
        return down.apply(ops, ops.gatedSilu(gate.apply(ops, x), up.apply(ops, x)));
    }

    /**
     * A sparse mixture of experts over every token of {@code x}, as transformers routes it: softmax of the router's
     * scores in float32, the {@code perToken} most probable experts (the lowest index on ties), their probabilities
     * renormalized over the chosen when the layout says so. The routing is written with static shapes (repeated
     * argmax, one-hot masks), and {@link TensorOps#mixture} runs only the chosen experts where the backend can.
     */
    private static Tensor mixture(TensorOps ops, MixtureWeights weights, Tensor x) {
        long tokens = x.size(0) * x.size(1);
        long hidden = x.size(2);
        int count = weights.experts().size();
        Tensor rows = ops.reshape(x, tokens, hidden);
        Tensor scores = ops.cast(weights.router().apply(ops, rows), DType.F32);
        long[] indices = new long[count];
        for (int expert = 0; expert < count; expert++) {
            indices[expert] = expert;
        }
        Tensor experts = ops.constant(indices, 1, count);
        // One pick at a time: the best remaining expert, then it is pushed far below every score.
        Tensor chosen = null;
        Tensor remaining = scores;
        for (int pick = 0; pick < weights.layout().perToken(); pick++) {
            Tensor best = ops.reshape(ops.argmax(remaining, -1), tokens, 1);
            Tensor hit = ops.cast(ops.compare(best, experts, Comparison.EQUAL), DType.F32);
            chosen = chosen == null ? hit : ops.add(chosen, hit);
            remaining = ops.add(remaining, ops.scale(hit, -UNCHOSEN));
        }
        // Renormalized top-k probabilities are the softmax over the chosen experts' scores alone.
        Tensor routing = weights.layout().normalize()
                ? ops.softmax(ops.add(scores, ops.scale(ops.add(chosen, ops.constant(new float[] {-1f}, 1)), UNCHOSEN)),
                        -1)
                : ops.mul(ops.softmax(scores, -1), chosen);
        routing = ops.cast(routing, x.dtype());
        List<UnaryOperator<Tensor>> mlps = weights.experts().stream()
                .<UnaryOperator<Tensor>>map(expert -> routed -> gatedMlp(ops, expert.gate(),
                        expert.up(), expert.down(), routed))
                .toList();
        return ops.reshape(ops.mixture(rows, routing, mlps), x.size(0), x.size(1), hidden);
    }

    /**
     * LFM2's gated short convolution of {@code x [B, T, H]}, as transformers' Lfm2ShortConv computes it: B, C and
     * x from in_proj; {@code B·x} with padding positions zeroed (so nothing of a left-padded row's padding reaches
     * its tokens); a depthwise causal convolution over the window of earlier {@code B·x} rows and this step's; C
     * gates it; out_proj. Without state the window before the step is zeros; with it, the step returns the window
     * that ends at its last position.
     */
    private static Tensor shortConvolution(TensorOps ops, ConvolutionWeights weights, Tensor x, Step step,
                                           LayerState.ConvolutionWindow window, List<LayerState> next, int index) {
        long batch = x.size(0);
        long length = x.size(1);
        int width = weights.layout().width();
        int kernel = weights.layout().length();
        Tensor projected = weights.input().apply(ops, x);
        Tensor gateB = ops.slice(projected, -1, 0, width);
        Tensor gateC = ops.slice(projected, -1, width, 2L * width);
        Tensor real = ops.compare(ops.reshape(step.querySlots(), 1, length, 1), ops.reshape(step.padding(), batch, 1, 1),
                Comparison.GREATER_OR_EQUAL);
        Tensor inputs = ops.mul(ops.mul(gateB, ops.slice(projected, -1, 2L * width, 3L * width)),
                ops.cast(real, x.dtype()));
        Tensor earlier = window != null ? window.recent() : ops.zeros(x.dtype(), batch, kernel - 1, width);
        Tensor sequence = ops.concat(List.of(earlier, inputs), 1);
        Tensor convolved = null;
        for (int tap = 0; tap < kernel; tap++) {
            Tensor weight = ops.reshape(ops.slice(weights.kernel(), 2, tap, tap + 1), 1, 1, width);
            Tensor term = ops.mul(ops.slice(sequence, 1, tap, tap + length), weight);
            convolved = convolved == null ? term : ops.add(convolved, term);
        }
        if (window != null) {
            // A copy (a concat of one part), not a view that would keep the whole step's sequence alive.
            next.set(index, new LayerState.ConvolutionWindow(ops.retain(ops.concat(List.of(ops.slice(sequence, 1,
                    length, length + kernel - 1)), 1))));
        }
        return weights.output().apply(ops, ops.mul(gateC, convolved));
    }

    /** How far below every router score an expert already picked (or not chosen) is pushed: exp() of it is 0. */
    private static final double UNCHOSEN = 1e9;

    /** Grouped-query attention of {@code x} over this step's keys and, with a cache, the earlier ones. */
    private Tensor attention(TensorOps ops, AttentionWeights weights, Tensor x, Tensor cos, Tensor sin, Tensor allowed,
                             Step step, LayerState.KeyValues cache, List<LayerState> next, int index) {
        Attention layout = weights.layout();
        long batch = x.size(0);
        long length = x.size(1);
        int headDim = layout.headDim();
        long queryWidth = (long) layout.heads() * headDim;
        long keyValueWidth = (long) layout.kvHeads() * headDim;
        Tensor queries;
        Tensor keys;
        Tensor values;
        if (weights.qkv() != null) {
            // Phi-3: one product, split into q, k and v (rows in that order).
            Tensor qkv = weights.qkv().apply(ops, x);
            queries = ops.slice(qkv, -1, 0, queryWidth);
            keys = ops.slice(qkv, -1, queryWidth, queryWidth + keyValueWidth);
            values = ops.slice(qkv, -1, queryWidth + keyValueWidth, queryWidth + 2 * keyValueWidth);
        } else {
            queries = weights.query().apply(ops, x);
            keys = weights.key().apply(ops, x);
            values = weights.value().apply(ops, x);
        }
        if (weights.queryNorm() != null && !layout.headNorms()) {
            // OLMo 2: the norm spans the whole projection, before it is split into heads.
            queries = norm(ops, queries, weights.queryNorm());
            keys = norm(ops, keys, weights.keyNorm());
        }
        boolean headNorms = layout.headNorms();
        queries = heads(ops, queries, batch, length, layout.heads(), headDim, headNorms ? weights.queryNorm() : null);
        keys = heads(ops, keys, batch, length, layout.kvHeads(), headDim, headNorms ? weights.keyNorm() : null);
        values = heads(ops, values, batch, length, layout.kvHeads(), headDim, null);
        if (cos.size(-1) > layout.rotaryDims() && layout.rotaryDims() > 0) {
            // Several tables side by side (Gemma 3's sliding layers have their own base): this layer's slice.
            long start = (long) layout.rotaryTable() * layout.rotaryDims();
            cos = ops.slice(cos, -1, start, start + layout.rotaryDims());
            sin = ops.slice(sin, -1, start, start + layout.rotaryDims());
        }
        queries = rotary(ops, queries, cos, sin, layout.rotaryDims());
        keys = rotary(ops, keys, cos, sin, layout.rotaryDims());

        if (cache != null) {
            Tensor allKeys = kept(ops, ops.writeSlots(cache.keys(), 2, step.querySlots(), keys), cache.keys());
            Tensor allValues = kept(ops, ops.writeSlots(cache.values(), 2, step.querySlots(), values), cache.values());
            next.set(index, new LayerState.KeyValues(allKeys, allValues));
            long attended = step.keySlots().size(0);
            keys = attended == cache.capacity() ? allKeys : ops.slice(allKeys, 2, 0, attended);
            values = attended == cache.capacity() ? allValues : ops.slice(allValues, 2, 0, attended);
        }
        Tensor attention = ops.attention(queries, keys, values, allowed, layout.scale(), layout.softcap());
        attention = ops.reshape(ops.transpose(attention, 1, 2), batch, length, (long) layout.heads() * headDim);
        return weights.output().apply(ops, attention);
    }

    /**
     * RMSNorm with the family's weights: as stored, or {@code 1 + weight} where the layout says the checkpoint keeps
     * the offset from one (Gemma; the sum is taken per step, so the placed and exported tensor stays the stored one).
     */
    private Tensor norm(TensorOps ops, Tensor x, Tensor weight) {
        if (weights.layout().unitOffsetNorms()) {
            weight = ops.add(weight, ops.cast(ops.constant(new float[] {1f}, 1), weight.dtype()));
        }
        return ops.rmsNorm(x, weight, config.rmsNormEps());
    }

    /** The gated MLP; a fused gate_up is one product split into gate (first) and up. */
    private static Tensor mlp(TensorOps ops, MlpWeights weights, Tensor x) {
        Tensor gate;
        Tensor up;
        if (weights.gateUp() != null) {
            long intermediate = weights.layout().intermediate();
            Tensor both = weights.gateUp().apply(ops, x);
            gate = ops.slice(both, -1, 0, intermediate);
            up = ops.slice(both, -1, intermediate, 2 * intermediate);
        } else {
            gate = weights.gate().apply(ops, x);
            up = weights.up().apply(ops, x);
        }
        Tensor activated = switch (weights.layout().activation()) {
            case SILU -> ops.gatedSilu(gate, up);
            case GELU_TANH -> ops.gatedGeluTanh(gate, up);
        };
        return weights.down().apply(ops, activated);
    }

    /**
     * Rotary embeddings on the first {@code dims} dimensions of each head, the rest passed through (partial rotary;
     * none at all for a layer without positions).
     */
    private static Tensor rotary(TensorOps ops, Tensor x, Tensor cos, Tensor sin, int dims) {
        long width = x.size(-1);
        if (dims == 0) {
            return x;
        }
        if (dims == width) {
            return ops.rotary(x, cos, sin);
        }
        return ops.concat(List.of(ops.rotary(ops.slice(x, -1, 0, dims), cos, sin), ops.slice(x, -1, dims, width)), -1);
    }

    /**
     * A state tensor a layer wrote: the same tensor when the write was in place, else the new one, retained so it
     * outlives the layer's scope (its caller frees the one it replaces).
     */
    private static Tensor kept(TensorOps ops, Tensor written, Tensor old) {
        return written == old ? written : ops.retain(written);
    }

    /** {@code [B, T, H·D]} to {@code [B, H, T, D]}, normalizing each head first when the model does (Qwen3). */
    private Tensor heads(TensorOps ops, Tensor projected, long batch, long length, int heads, int headDim,
                         Tensor headNorm) {
        Tensor split = ops.reshape(projected, batch, length, heads, headDim);
        if (headNorm != null) {
            split = norm(ops, split, headNorm);
        }
        return ops.transpose(split, 1, 2);
    }

    /**
     * {@code [B, 1, T, S]}: query slot q sees key slot k when {@code k <= q} and k is a real token of the row
     * ({@code k >= padding}). A padding query also sees itself, so no softmax row is empty; nothing real ever
     * attends to padding, so real rows are exactly what they would be unpadded.
     */
    static Tensor attentionMask(TensorOps ops, Step step, long batch, long length) {
        long keyCount = step.keySlots().size(0);
        Tensor keySlots = ops.reshape(step.keySlots(), 1, 1, 1, keyCount);
        Tensor querySlots = ops.reshape(step.querySlots(), 1, 1, length, 1);
        Tensor padding = ops.reshape(step.padding(), batch, 1, 1, 1);
        Tensor causal = ops.compare(keySlots, querySlots, Comparison.LESS_OR_EQUAL);
        Tensor real = ops.compare(keySlots, padding, Comparison.GREATER_OR_EQUAL);
        Tensor itself = ops.compare(keySlots, querySlots, Comparison.EQUAL);
        return ops.and(causal, ops.or(real, itself));
    }

    /**
     * The step's masks, one per attention window of the layout, made before the layers run (in the step's scope,
     * which outlives every layer's). The full mask is {@link #attentionMask}; a window of W also requires
     * {@code q - k < W}, i.e. {@code k + W > q}: slots are positions plus the row's padding, so their differences
     * are distances between tokens.
     */
    private record Masks(Tensor full, Map<Integer, Tensor> windowed) {

        static Masks of(TensorOps ops, Step step, Tensor full, Set<Integer> windows) {
            Map<Integer, Tensor> windowed = new HashMap<>();
            long keyCount = step.keySlots().size(0);
            long queryCount = step.querySlots().size(0);
            for (int window : windows) {
                if (window > 0) {
                    Tensor shifted = ops.add(ops.reshape(step.keySlots(), 1, 1, 1, keyCount),
                            ops.constant(new long[] {window}, 1));
                    Tensor near = ops.compare(shifted, ops.reshape(step.querySlots(), 1, 1, queryCount, 1),
                            Comparison.GREATER);
                    windowed.put(window, ops.and(full, near));
                }
            }
            return new Masks(full, windowed);
        }

        Tensor forWindow(int window) {
            return window == 0 ? full : windowed.get(window);
        }
    }
}
