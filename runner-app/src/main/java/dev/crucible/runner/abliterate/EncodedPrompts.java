package dev.crucible.runner.abliterate;

import dev.crucible.runner.session.ContextBudget;
import dev.crucible.runner.session.ModelSession;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A prompt set as the model gets it: each prompt chat-rendered with the set's system prompt and the response
 * prefix, encoded, and checked against the model's context (or cut to fit, as the budget says) before anything
 * runs on it.
 *
 * @param texts the prompts as scored and shown, cut where they were cut
 * @param ids   their token ids
 * @param cut   how many were cut
 */
public record EncodedPrompts(List<String> texts, List<int[]> ids, int cut) {
    public EncodedPrompts {
        texts = List.copyOf(texts);
        ids = List.copyOf(ids);
    }

    /**
     * Encodes {@code group}; a prompt that does not fit is refused with a line naming it ({@code prompt 3 of
     * bad-prompts}) unless the budget cuts it.
     */
    public static EncodedPrompts of(ModelSession session, ContextBudget budget, Abliterator.PromptGroup group,
                                    String responsePrefix) {
        List<String> texts = new ArrayList<>(group.texts().size());
        List<int[]> ids = new ArrayList<>(group.texts().size());
        int cut = 0;
        for (int i = 0; i < group.texts().size(); i++) {
            ContextBudget.Fitted fitted = budget.fit("prompt " + (i + 1) + " of " + group.name(), group.texts().get(i),
                    text -> session.tokenizer().encodeChat(group.systemPrompt(), text, responsePrefix));
            texts.add(fitted.text());
            ids.add(fitted.ids());
            cut += fitted.cut() ? 1 : 0;
        }
        return new EncodedPrompts(texts, ids, cut);
    }

    /** The line that tells the user prompts of {@code group} were cut, when any were. */
    public Optional<String> cutNote(ContextBudget budget, Abliterator.PromptGroup group) {
        return cut == 0 ? Optional.empty() : Optional.of(budget.cutNote(cut, texts.size(), "prompts of " + group.name()));
    }
}
