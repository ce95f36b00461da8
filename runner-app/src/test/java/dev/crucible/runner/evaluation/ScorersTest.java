package dev.crucible.runner.evaluation;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.scoring.Optimization;
import dev.crucible.runner.study.Objective;
import dev.crucible.scorers.KlDivergenceProvider;
import dev.crucible.scorers.RefusalRateProvider;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ScorersTest {
    @Test
    void eachEntryBecomesAnInstanceNamedAsConfiguredWithThePluginsDirectionUnlessGiven() {
        List<ScorerInstance> made = Scorers.create(List.of(
                new ScorerSpec("refusals", "strict", Optional.of(Optimization.NONE), Map.of("markers", List.of("no"))),
                ScorerSpec.of("refusals"),
                ScorerSpec.of("kl_divergence")), List.of(new KlDivergenceProvider(), new RefusalRateProvider()));
        assertEquals(List.of(new Objective("strict", Optimization.NONE), new Objective("refusals", Optimization.MINIMIZE),
                new Objective("kl_divergence", Optimization.MINIMIZE)), made.stream().map(ScorerInstance::objective).toList());
        assertEquals(List.of("strict", "refusals", "kl_divergence"), made.stream().map(s -> s.scorer().name()).toList());
    }
}
