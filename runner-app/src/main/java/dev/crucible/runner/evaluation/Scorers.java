package dev.crucible.runner.evaluation;

import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.Scorer;
import dev.crucible.api.scoring.ScorerProvider;
import dev.crucible.runner.prompts.Suggestions;
import dev.crucible.runner.study.Objective;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Scorer instances made from {@code [[scorers]]} entries by the scorer plugins found: for abliterate, evaluate and finetune alike. */
public final class Scorers {
    private Scorers() {
    }

    /**
     * One instance per entry, in order; the objective's direction is the entry's, else the plugin's default.
     *
     * @param providers the scorer plugins found (the first of a name wins, as the plugin host reports duplicates)
     * @throws UserInputException for an entry whose plugin is not among them, or settings the plugin refuses
     */
    public static List<ScorerInstance> create(List<ScorerSpec> specs, Collection<ScorerProvider> providers) {
        Map<String, ScorerProvider> byName = new LinkedHashMap<>();
        for (ScorerProvider provider : providers) {
            byName.putIfAbsent(provider.name(), provider);
        }
        requireKnown(specs, byName.keySet());
        List<ScorerInstance> out = new ArrayList<>();
        for (ScorerSpec spec : specs) {
            Scorer scorer = byName.get(spec.plugin()).create(spec.instanceName(), spec.settings());
            out.add(new ScorerInstance(scorer, new Objective(spec.instanceName(),
                    spec.optimization().orElse(scorer.defaultOptimization()))));
        }
        return out;
    }

    /**
     * Checks every entry's plugin against the plugins found, before anything is created.
     *
     * @throws UserInputException naming the first unknown scorer and listing the available ones
     */
    public static void requireKnown(List<ScorerSpec> specs, Collection<String> available) {
        for (ScorerSpec spec : specs) {
            if (!available.contains(spec.plugin())) {
                throw new UserInputException("unknown scorer '" + spec.plugin() + "'"
                        + Suggestions.didYouMean(spec.plugin(), available) + " (available: "
                        + String.join(", ", available.stream().sorted().toList()) + ")");
            }
        }
    }
}
