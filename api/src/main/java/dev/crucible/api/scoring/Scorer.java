package dev.crucible.api.scoring;

/**
 * One configured scorer instance. Created by a {@link ScorerProvider} from its settings table; several instances
 * of one provider with different settings may run side by side.
 */
public interface Scorer {

    /** The instance name shown in tables and JSON, e.g. "refusals" or "kl_divergence". */
    String name();

    /** The direction the provider recommends when the configuration does not say. */
    Optimization defaultOptimization();

    /** The value for the unedited base model, computed once at the start of a study. */
    Score baseline(ScoringContext context);

    /** The value for the current model state (one trial). */
    Score score(ScoringContext context);
}
