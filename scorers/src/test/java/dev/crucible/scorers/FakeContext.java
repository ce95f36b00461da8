package dev.crucible.scorers;

import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.ScoringContext;
import java.util.List;
import java.util.Map;

/** A scoring context from hand-made data. */
record FakeContext(Map<PromptSet, List<String>> responses, Map<PromptSet, float[][]> logProbs,
                   Map<PromptSet, float[][]> baseLogProbs) implements ScoringContext {

    static FakeContext ofResponses(PromptSet set, List<String> responses) {
        return new FakeContext(Map.of(set, responses), Map.of(), Map.of());
    }

    static FakeContext ofLogProbs(PromptSet set, float[][] base, float[][] current) {
        return new FakeContext(Map.of(), Map.of(set, current), Map.of(set, base));
    }

    @Override
    public List<String> prompts(PromptSet set) {
        return responses.get(set).stream().map(r -> "prompt").toList();
    }

    @Override
    public List<String> responses(PromptSet set) {
        return responses.get(set);
    }

    @Override
    public float[][] firstTokenLogProbs(PromptSet set) {
        return logProbs.get(set);
    }

    @Override
    public float[][] baseFirstTokenLogProbs(PromptSet set) {
        return baseLogProbs.get(set);
    }
}
