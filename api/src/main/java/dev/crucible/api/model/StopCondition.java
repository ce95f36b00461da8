package dev.crucible.api.model;

/**
 * Ends a row of a generation before a stop token or the length limit: asked after each token a row generates, with
 * the row's tokens so far, whether anything after them could still matter to whoever asked. A refusal count, for
 * one, is decided once a response holds a refusal marker: every continuation still holds it, so the tokens after
 * it would be generated for nothing (on the demo model a refusal is ~50 tokens whose marker ends by the ninth).
 *
 * <p>It runs on the decoding thread between steps, for each row still generating; with batches side by side it is
 * called from several threads at once.
 */
@FunctionalInterface
public interface StopCondition {

    /** Never ends a row early; decoding with it does no extra work. */
    StopCondition NONE = (prompt, tokens) -> false;

    /**
     * @param prompt the row's index in {@link DecodeRequest#prompts()}
     * @param tokens the tokens it generated so far (not a stop token: a row that generated one has ended; not the
     *               length limit's last, after which it ends anyway)
     * @return true to end the row here; its {@link Generation} then holds these tokens and is not
     *         {@link Generation#stopped()}
     */
    boolean settled(int prompt, int[] tokens);
}
