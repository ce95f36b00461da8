package dev.crucible.api.model;

import dev.crucible.api.tensor.DType;


/**
 * What one forward step of a decoder costs, counted from its config: bytes of weights that must stream from memory
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
 * @param attentionWidth  layers × query heads × head width: one query against one key costs {@code 4 ×} this
 * @param cacheRowBytes   bytes of keys and values one token keeps in the cache, over all layers
 * @param hidden          hidden size (bytes of one embedding row, in elements)
 */
public record ModelCost(long linearParams, long headParams, long normParams, long untiedEmbedding, int elementBytes,
                        long linearBytes, long attentionWidth, long cacheRowBytes, long hidden) {

    public static ModelCost of(ModelConfig config, DType dtype) {
        long hidden = config.hiddenSize();
        long queryWidth = (long) config.numHeads() * config.headDim();
        long keyValueWidth = (long) config.numKvHeads() * config.headDim();
        long intermediate = config.intermediateSize();
        long perLayer = queryWidth * hidden + 2 * keyValueWidth * hidden + hidden * queryWidth
                + 3 * intermediate * hidden;
        if (config.qkvBias()) {
            perLayer += queryWidth + 2 * keyValueWidth;
        }
        if (config.outputBias()) {
            perLayer += hidden;
        }
        if (config.mlpBias()) {
            perLayer += 2 * intermediate + hidden;
        }
        long norms = 2 * hidden + (config.qkNorm() ? 2L * config.headDim() : 0);
        long head = (long) config.vocabSize() * hidden;
        int bytes = dtype.byteSize();
        long linear = config.numLayers() * perLayer;
        return new ModelCost(linear, head, config.numLayers() * norms + hidden,
                config.tieWordEmbeddings() ? 0 : head, bytes, linear * bytes,
                (long) config.numLayers() * queryWidth, 2L * config.numLayers() * keyValueWidth * bytes, hidden);
    }

    /** Every distinct weight (the tied head once). */
    public long parameters() {
        return linearParams + headParams + normParams + untiedEmbedding;
    }

    /** Bytes of every distinct weight: what the model must hold. */
    public long weightBytes() {
        return linearBytes + (headParams + normParams + untiedEmbedding) * elementBytes;
    }

    /**
     * The same model with its projections kept in {@code linearBytes} (quantized): what a step reads shrinks with
     * them, the operations do not.
     */
    public ModelCost withLinearBytes(long linearBytes) {
        return new ModelCost(linearParams, headParams, normParams, untiedEmbedding, elementBytes, linearBytes,
                attentionWidth, cacheRowBytes, hidden);
    }

    /**
     * Bytes one decode step must read for {@code batch} rows attending over {@code context} tokens each: every
     * projection and the head once (shared by the rows), the norms, each row's embedding and its keys and values.
     */
    public double decodeStepBytes(int batch, double context) {
        long shared = linearBytes + (headParams + normParams) * elementBytes;
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
