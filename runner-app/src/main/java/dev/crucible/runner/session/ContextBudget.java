package dev.crucible.runner.session;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.runner.text.ModelTokenizer;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * What fits in a model's context: a prompt's tokens plus the tokens generated after it (Hugging Face's
 * {@code max_length}), at most {@link ModelConfig#contextLength()}. Every prompt is checked here right after it is
 * encoded and before anything is computed, so a too-long one is refused with a line that names it, or cut when the
 * user asked for that ({@link PromptTruncation}).
 */
public final class ContextBudget {
    /** Re-encoding cut text can merge tokens differently; a few rounds always settle it. */
    private static final int CUT_ROUNDS = 8;

    private final ModelTokenizer tokenizer;
    private final ModelConfig config;
    private final int newTokens;
    private final String newTokensFlag;
    private final PromptTruncation truncation;

    /**
     * @param newTokens     tokens generated after each prompt (0 for a forward pass only)
     * @param newTokensFlag the flag that set them, for messages ({@code --max-new-tokens})
     * @throws UserInputException when {@code newTokens} alone leave no room for a prompt
     */
    public ContextBudget(ModelTokenizer tokenizer, ModelConfig config, int newTokens, String newTokensFlag,
                         PromptTruncation truncation) {
        this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer is null");
        this.config = Objects.requireNonNull(config, "config is null");
        this.newTokensFlag = Objects.requireNonNull(newTokensFlag, "newTokensFlag is null");
        this.truncation = Objects.requireNonNull(truncation, "truncation is null");
        if (newTokens < 0) {
            throw new IllegalArgumentException("newTokens must be >= 0, got " + newTokens);
        }
        if (newTokens >= config.contextLength()) {
            throw new UserInputException(String.format(Locale.ROOT, "%s %,d leaves no room for a prompt in %s",
                    newTokensFlag, newTokens, config.describeContext()));
        }
        this.newTokens = newTokens;
    }

    /** A prompt as the model gets it: its text (cut, when it was) and its ids. */
    public record Fitted(String text, int[] ids, boolean cut) {
    }

    /** Whether a prompt of {@code promptTokens} fits with the tokens to generate. */
    public boolean fits(int promptTokens) {
        return (long) promptTokens + newTokens <= config.contextLength();
    }

    /**
     * Encodes {@code text} and checks it fits; cuts it when it does not and truncation was asked for.
     *
     * @param label  names the prompt in messages: {@code prompt 3 of bad-prompts}
     * @param encode the prompt's full encoding (chat template, system prompt, special tokens)
     * @throws UserInputException when it does not fit and may not be cut, or cannot be cut to fit
     */
    public Fitted fit(String label, String text, Function<String, int[]> encode) {
        int[] ids = encode.apply(text);
        if (fits(ids.length)) {
            return new Fitted(text, ids, false);
        }
        if (truncation == PromptTruncation.NONE) {
            throw new UserInputException(tooLong(label, ids.length) + " (use --truncate-prompts left|right to cut it)");
        }
        int[] content = tokenizer.encodeWithoutSpecialTokens(text);
        int framing = Math.max(0, ids.length - content.length);
        long keep = config.contextLength() - newTokens - framing;
        for (int round = 0; round < CUT_ROUNDS && keep > 0; round++) {
            int kept = (int) Math.min(keep, content.length);
            String cut = tokenizer.decode(truncation == PromptTruncation.LEFT
                    ? Arrays.copyOfRange(content, content.length - kept, content.length)
                    : Arrays.copyOf(content, kept));
            int[] cutIds = encode.apply(cut);
            if (fits(cutIds.length)) {
                return new Fitted(cut, cutIds, true);
            }
            keep = kept - Math.max(1, cutIds.length + (long) newTokens - config.contextLength());
        }
        throw new UserInputException(tooLong(label, ids.length) + "; even cut it does not fit: its chat template and"
                + String.format(Locale.ROOT, " system prompt alone take about %,d tokens", framing));
    }

    /** The line that refuses a prompt of {@code promptTokens}. */
    public String tooLong(String label, int promptTokens) {
        if (newTokens == 0) {
            return String.format(Locale.ROOT, "%s is %,d tokens, more than %s", label, promptTokens,
                    config.describeContext());
        }
        return String.format(Locale.ROOT, "%s is %,d tokens; with %s %,d that exceeds %s", label, promptTokens,
                newTokensFlag, newTokens, config.describeContext());
    }

    public PromptTruncation truncation() {
        return truncation;
    }

    /**
     * The note a command prints after cutting prompts: {@code cut 2 of 100 prompts of bad-prompts ...}.
     *
     * @param what names the prompts: {@code prompts of bad-prompts}
     */
    public String cutNote(int cut, int total, String what) {
        return String.format(Locale.ROOT, "note: cut %,d of %,d %s to fit %s with %s %,d (--truncate-prompts %s)",
                cut, total, what, config.describeContext(), newTokensFlag, newTokens,
                truncation.name().toLowerCase(Locale.ROOT));
    }
}
