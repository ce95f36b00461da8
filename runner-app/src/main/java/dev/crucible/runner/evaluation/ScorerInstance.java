package dev.crucible.runner.evaluation;

import dev.crucible.api.scoring.Scorer;
import dev.crucible.runner.study.Objective;
import java.util.Objects;

/** A configured scorer and the objective it feeds (its instance name and optimization direction). */
public record ScorerInstance(Scorer scorer, Objective objective) {
    public ScorerInstance {
        Objects.requireNonNull(scorer, "scorer is null");
        Objects.requireNonNull(objective, "objective is null");
    }
}
