package dev.crucible.runner.abliterate;

import dev.crucible.api.model.Generation;
import dev.crucible.runner.session.ModelSession;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The text appended after the generation prompt so responses start where the answer starts. Reasoning models
 * open every answer with a thought block; when the base model's answers share a {@code <think>} opening, the
 * prompts get a closed, empty thought block so the scored text is the answer itself.
 */
public final class ResponsePrefix {
    static final String CLOSED_THOUGHT = "<think>\n\n</think>\n\n";
    private static final int SAMPLE_PROMPTS = 8;
    private static final int SAMPLE_TOKENS = 24;

    private ResponsePrefix() {
    }

    /**
     * Generates a few short answers with the base model and returns the prefix to use ("" for none). Samples too
     * long for the model's context are left out: they are refused, or cut, with the rest of their set.
     */
    public static String detect(ModelSession session, List<String> prompts, Optional<String> systemPrompt) {
        List<int[]> ids = new ArrayList<>();
        for (String prompt : prompts.subList(0, Math.min(SAMPLE_PROMPTS, prompts.size()))) {
            int[] encoded = session.tokenizer().encodeChat(systemPrompt, prompt);
            if ((long) encoded.length + SAMPLE_TOKENS <= session.config().contextLength()) {
                ids.add(encoded);
            }
        }
        if (ids.isEmpty()) {
            return "";
        }
        List<String> answers = new ArrayList<>();
        for (Generation g : session.generate(ids, SAMPLE_TOKENS, 0)) {
            answers.add(session.tokenizer().decode(g.tokens()));
        }
        return fromAnswers(answers);
    }

    /** The rule itself, on decoded answers. */
    static String fromAnswers(List<String> answers) {
        if (answers.isEmpty()) {
            return "";
        }
        String common = answers.getFirst();
        for (String answer : answers) {
            int n = 0;
            while (n < common.length() && n < answer.length() && common.charAt(n) == answer.charAt(n)) {
                n++;
            }
            common = common.substring(0, n);
        }
        String trimmed = common.stripLeading();
        if (!trimmed.startsWith("<think>")) {
            return "";
        }
        int close = common.indexOf("</think>");
        if (close >= 0) {
            int end = close + "</think>".length();
            while (end < common.length() && Character.isWhitespace(common.charAt(end))) {
                end++;
            }
            return common.substring(0, end);
        }
        return CLOSED_THOUGHT;
    }
}
