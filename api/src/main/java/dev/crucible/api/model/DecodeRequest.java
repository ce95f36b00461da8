package dev.crucible.api.model;

import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Batched greedy generation.
 *
 * @param prompts       token ids per prompt, each non-empty
 * @param maxNewTokens  tokens to generate per prompt at most (at least 1)
 * @param stopTokens    ids that end a row once generated (the stop token is kept in its output); empty never
 *                      stops early
 * @param padToken      the id written into left padding; its embedding is computed but never attended to
 * @param batchSize     prompts per device batch; 0 lets the backend choose
 * @param listener      sees each step's tokens as they are generated ({@link TokenListener#NONE}: nobody)
 * @param settled       ends a row early once its tokens so far are all that is needed ({@link StopCondition#NONE}:
 *                      never)
 */
public record DecodeRequest(List<int[]> prompts, int maxNewTokens, Set<Integer> stopTokens, int padToken,
                            int batchSize, TokenListener listener, StopCondition settled) {
    public DecodeRequest {
        prompts = Prompts.copyOf(prompts);
        stopTokens = Set.copyOf(stopTokens);
        Objects.requireNonNull(listener, "listener is null");
        Objects.requireNonNull(settled, "settled is null");
        if (maxNewTokens < 1) {
            throw new IllegalArgumentException("maxNewTokens must be at least 1, got " + maxNewTokens);
        }
        if (padToken < 0) {
            throw new IllegalArgumentException("padToken must be a token id, got " + padToken);
        }
        if (batchSize < 0) {
            throw new IllegalArgumentException("batchSize must be >= 0, got " + batchSize);
        }
    }

    /** A request whose rows run to a stop token or the length limit. */
    public DecodeRequest(List<int[]> prompts, int maxNewTokens, Set<Integer> stopTokens, int padToken, int batchSize,
                         TokenListener listener) {
        this(prompts, maxNewTokens, stopTokens, padToken, batchSize, listener, StopCondition.NONE);
    }

    /** A request nobody listens to while it runs. */
    public DecodeRequest(List<int[]> prompts, int maxNewTokens, Set<Integer> stopTokens, int padToken, int batchSize) {
        this(prompts, maxNewTokens, stopTokens, padToken, batchSize, TokenListener.NONE);
    }

    /**
     * Stops on the config's EOS ids and pads with its pad id, or the first EOS when it has none (as Hugging Face
     * generation does), or 0.
     */
    public static DecodeRequest greedy(List<int[]> prompts, int maxNewTokens, ModelConfig config) {
        return new DecodeRequest(prompts, maxNewTokens, Set.copyOf(config.eosTokenIds()), defaultPadToken(config), 0);
    }

    /** The same request with other stop tokens (empty: run every row to {@code maxNewTokens}). */
    public DecodeRequest withStopTokens(Set<Integer> tokens) {
        return new DecodeRequest(prompts, maxNewTokens, tokens, padToken, batchSize, listener, settled);
    }

    public DecodeRequest withBatchSize(int size) {
        return new DecodeRequest(prompts, maxNewTokens, stopTokens, padToken, size, listener, settled);
    }

    /** The same request streamed to {@code tokens}. */
    public DecodeRequest withListener(TokenListener tokens) {
        return new DecodeRequest(prompts, maxNewTokens, stopTokens, padToken, batchSize, tokens, settled);
    }

    /** The same request, each row ending once {@code condition} says its tokens so far settle it. */
    public DecodeRequest withStopCondition(StopCondition condition) {
        return new DecodeRequest(prompts, maxNewTokens, stopTokens, padToken, batchSize, listener, condition);
    }

    public static int defaultPadToken(ModelConfig config) {
        if (config.padTokenId().isPresent()) {
            return config.padTokenId().getAsInt();
        }
        return config.eosTokenIds().isEmpty() ? 0 : config.eosTokenIds().getFirst();
    }

    @Override
    public List<int[]> prompts() {
        return Prompts.copyOf(prompts);
    }
}
