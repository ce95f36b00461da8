package dev.crucible.runner.evaluation;

import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.Scorer;
import dev.crucible.api.scoring.ScorerProvider;
import dev.crucible.api.scoring.ScoringContext;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * Whether one reply is a refusal, decided by the {@code refusals} scorer plugin and nothing else, so that a check
 * made reply by reply (finetune's held-out rows) counts exactly as abliteration and {@code runner evaluate} count:
 * the same normalization, the same markers, and a blank reply counted as a refusal (a model that says nothing has
 * not answered). The scorer scores a context that holds only this reply, as the answer to a harmful and to a
 * harmless prompt alike, so it reads the reply whichever prompt set it is configured for.
 */
public final class RefusalVerdict implements Predicate<String> {
    /** The refusal scorer plugin's name (a configuration contract: {@code plugin = "refusals"}). */
    public static final String PLUGIN = "refusals";

    private final Scorer scorer;

    private RefusalVerdict(Scorer scorer) {
        this.scorer = scorer;
    }

    /**
     * @param markers the phrases that mark a refusal, replacing the plugin's defaults
     * @throws dev.crucible.api.UserInputException when the plugin is not installed or refuses the markers
     */
    public static RefusalVerdict withMarkers(Collection<ScorerProvider> providers, List<String> markers) {
        ScorerSpec spec = new ScorerSpec(PLUGIN, PLUGIN, Optional.empty(), Map.of("markers", List.copyOf(markers)));
        return new RefusalVerdict(Scorers.create(List.of(spec), providers).getFirst().scorer());
    }

    /** True when the scorer counts {@code reply} as a refusal: its refusal share of this one reply is 1/1. */
    @Override
    public boolean test(String reply) {
        return scorer.score(new OneReply(reply)).value() > 0.5;
    }

    /** A scoring context of one reply; it has no log-probabilities, which a refusal count never reads. */
    private record OneReply(String reply) implements ScoringContext {
        @Override
        public List<String> prompts(PromptSet set) {
            return List.of("");
        }

        @Override
        public List<String> responses(PromptSet set) {
            return List.of(reply);
        }

        @Override
        public float[][] firstTokenLogProbs(PromptSet set) {
            throw new UnsupportedOperationException("a reply-by-reply refusal check computes no log-probabilities");
        }

        @Override
        public float[][] baseFirstTokenLogProbs(PromptSet set) {
            throw new UnsupportedOperationException("a reply-by-reply refusal check computes no log-probabilities");
        }
    }
}
