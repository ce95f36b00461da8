package dev.crucible.api.model;

/**
 * Sees generated tokens as each decode step produces them, so a caller can stream text or time steps. It runs on
 * the decoding thread between steps: a slow listener slows the generation down, nothing else.
 */
@FunctionalInterface
public interface TokenListener {

    /** Listens to nothing; decoding with it does no extra work. */
    TokenListener NONE = (prompts, tokens) -> { };

    /**
     * One step's tokens: {@code tokens[i]} was generated for {@code prompts[i]}, an index into
     * {@link DecodeRequest#prompts()}. Rows that already stopped are absent; a stop token is reported like any
     * other. The first call for a prompt follows its prefill.
     */
    void onTokens(int[] prompts, int[] tokens);
}
