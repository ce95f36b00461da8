package dev.crucible.api.model;

import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.model.layout.Role;
import dev.crucible.api.tensor.DType;


/**
 * What one forward step of a decoder costs, counted from its layout: bytes of weights that must stream from memory
 * and floating-point operations (a multiply-add is two). Embedding rows are gathered, not multiplied, so they count
 * as bytes read only for the rows used. Attention is counted causally (the useful work, not what a kernel may
 * compute and mask away).
 *
 * @param linearParams    parameters of every layer's projections, biases included (each is one multiply-add per
 *                        token)
 * @param headParams      parameters of the output head ({@code vocab × hidden}), shared with the embedding when tied
 * @param normParams      parameters of every norm
 * @param untiedEmbedding parameters of the embedding table when it is not the head, else 0
 * @param elementBytes    bytes per parameter in the compute dtype
 * @param linearBytes     bytes of the projections as they are kept: {@code linearParams × elementBytes} when dense,
 *                        less when they are quantized
 * @param headBytes       bytes of the head as its product reads it: {@code headParams × elementBytes} when dense,
 *                        less when it is quantized (with tied embeddings a quantized copy beside the dense table)
 * @param attentionWidth  layers × query heads × head width: one query against one key costs {@code 4 ×} this
 * @param cacheRowBytes   bytes of keys and values one token keeps in the cache, over all layers
 * @param hidden          hidden size (bytes of one embedding row, in elements)
 */
public record ModelCost(long linearParams, long headParams, long normParams, long untiedEmbedding, int elementBytes,
                        long linearBytes, long headBytes, long attentionWidth, long cacheRowBytes, long hidden) {

    /** The cost of {@code config}'s model, from its layout. */
    public static ModelCost of(ModelConfig config, DType dtype) {
        return of(config.layout(), dtype);
    }

    /**
     * Counted from the layout: every block's projections and norms, the head (the embedding when tied), and each
     * attention block's heads for the per-token attention work and the cache.
     */
    public static ModelCost of(ModelLayout layout, DType dtype) {
        long linear = 0;
        long norms = 0;
        for (Parameter parameter : layout.parameters()) {
            if (parameter.role().isProjection()) {
                linear += parameter.elementCount();
            } else if (parameter.role() != Role.EMBEDDING && parameter.role() != Role.OUTPUT_HEAD) {
                norms += parameter.elementCount();
            }
        }
        long attentionWidth = 0;
        long cacheWidth = 0;
        for (Attention attention : layout.blocks(Attention.class)) {
            attentionWidth += (long) attention.heads() * attention.headDim();
            cacheWidth += 2L * attention.kvHeads() * attention.headDim();
        }
        long head = layout.outputHead().elementCount();
        int bytes = dtype.byteSize();
        return new ModelCost(linear, head, norms, layout.tiedHead() ? 0 : layout.embedding().elementCount(), bytes,
                linear * bytes, head * bytes, attentionWidth, cacheWidth * bytes, layout.embedding().shape()[1]);
    }

    /** Every distinct weight (the tied head once). */
    public long parameters() {
        return linearParams + headParams + normParams + untiedEmbedding;
    }

    /** Bytes of every distinct weight: what the model must hold. */
    public long weightBytes() {
        // A tied head kept quantized is a copy: the dense table stays for the lookups.
        long table = untiedEmbedding == 0 && quantizedHead() ? headParams * elementBytes : 0;
        return linearBytes + headBytes + table + (normParams + untiedEmbedding) * elementBytes;
    }

    /** Whether the head is kept in fewer bytes than dense ones ({@link #withQuantized}). */
    public boolean quantizedHead() {
        return headBytes != headParams * elementBytes;
    }

    /**
     * The same model with its projections kept in {@code linearBytes} and its head in {@code headBytes}
     * (quantized): what a step reads shrinks with them, the operations do not.
     */
    public ModelCost withQuantized(long linearBytes, long headBytes) {
        return new ModelCost(linearParams, headParams, normParams, untiedEmbedding, elementBytes, linearBytes,
                headBytes, attentionWidth, cacheRowBytes, hidden);
    }

    /**
     * Bytes one decode step must read for {@code batch} rows attending over {@code context} tokens each: every
     * projection and the head once (shared by the rows), the norms, each row's embedding and its keys and values.
     */
    public double decodeStepBytes(int batch, double context) {
        long shared = linearBytes + headBytes + normParams * elementBytes;
        return shared + batch * (hidden * elementBytes + context * cacheRowBytes);
    }

    /** Floating-point operations of one decode step: {@code batch} tokens, each over {@code context} keys. */
    public double decodeStepFlops(int batch, double context) {
        return batch * (2.0 * (linearParams + headParams) + 4.0 * attentionWidth * context);
    }

    /** Floating-point operations of prefilling {@code batch} prompts of {@code length}: logits of the last token only. */
    public double prefillFlops(int batch, int length) {
        double causalPairs = length * (length + 1) / 2.0;
        return batch * (2.0 * linearParams * length + 4.0 * attentionWidth * causalPairs + 2.0 * headParams);
    }
}
