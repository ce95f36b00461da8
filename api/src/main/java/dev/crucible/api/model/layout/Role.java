package dev.crucible.api.model.layout;

/**
 * What a parameter does in the model. Everything derived from a layout asks this, never a tensor's name: which
 * projections take LoRA adapters, which a QLoRA base keeps in 4 bits, which write into the residual stream (what
 * abliteration edits), what a forward step costs.
 */
public enum Role {
    EMBEDDING,
    OUTPUT_HEAD,
    /** An RMSNorm over the hidden state: before (or after) a block, or the final one. */
    NORM,
    /** Attention's per-head RMSNorm of the queries (Qwen3). */
    QUERY_NORM,
    /** Attention's per-head RMSNorm of the keys (Qwen3). */
    KEY_NORM,
    ATTENTION_QUERY,
    ATTENTION_KEY,
    ATTENTION_VALUE,
    /** q, k and v as one fused projection, their rows in that order (Phi-3's {@code qkv_proj}). */
    ATTENTION_QKV,
    /** Attention's output projection: writes into the residual stream. */
    ATTENTION_OUTPUT,
    /** A mixture of experts' router: one score per expert (Qwen3-MoE's {@code mlp.gate}, Mixtral's). */
    ROUTER,
    /** A short convolution's input projection to B, C and x (LFM2's {@code conv.in_proj}). */
    CONVOLUTION_INPUT,
    /** A short convolution's depthwise kernel (LFM2's {@code conv.conv.weight}). */
    CONVOLUTION_KERNEL,
    /** A short convolution's output projection: writes into the residual stream. */
    CONVOLUTION_OUTPUT,
    MLP_GATE,
    MLP_UP,
    /** The gate and up projections fused, gate rows first (Phi-3's {@code gate_up_proj}). */
    MLP_GATE_UP,
    /** The MLP's down projection: writes into the residual stream. */
    MLP_DOWN;

    /** A block's projection (a linear layer over the hidden state or a block's inner width). */
    public boolean isProjection() {
        return switch (this) {
            case ATTENTION_QUERY, ATTENTION_KEY, ATTENTION_VALUE, ATTENTION_QKV, ATTENTION_OUTPUT, ROUTER,
                 CONVOLUTION_INPUT, CONVOLUTION_OUTPUT, MLP_GATE, MLP_UP, MLP_GATE_UP, MLP_DOWN -> true;
            default -> false;
        };
    }

    /** A projection whose output is added to the residual stream: a block's last one. */
    public boolean writesResidual() {
        return this == ATTENTION_OUTPUT || this == CONVOLUTION_OUTPUT || this == MLP_DOWN;
    }
}
