package dev.crucible.scorers;

import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.Score;
import dev.crucible.api.scoring.Scorer;
import dev.crucible.api.scoring.ScorerProvider;
import dev.crucible.api.scoring.ScoringContext;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@code kl_divergence}: how far the edited model's first-token distribution moved from the base model's, as the
 * mean over the harmless prompts of KL(P_base || P_current). 0 for the base model; above about 0.5 the damage is
 * usually visible in the answers.
 *
 * <p>Settings: {@code prompt_set} ("harmless" by default).
 */
public final class KlDivergenceProvider implements ScorerProvider {

    public static final String NAME = "kl_divergence";
    private static final Set<String> SETTINGS = Set.of("prompt_set");

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Scorer create(String instanceName, Map<String, Object> settings) {
        String name = instanceName == null || instanceName.isBlank() ? NAME : instanceName;
        ScorerSettings table = new ScorerSettings(name, settings, SETTINGS);
        return new KlDivergence(name, table.promptSet("prompt_set", PromptSet.HARMLESS));
    }

    record KlDivergence(String name, PromptSet promptSet) implements Scorer {

        @Override
        public Optimization defaultOptimization() {
            return Optimization.MINIMIZE;
        }

        @Override
        public Score baseline(ScoringContext context) {
            return display(0.0);
        }

        @Override
        public Score score(ScoringContext context) {
            float[][] base = context.baseFirstTokenLogProbs(promptSet);
            float[][] current = context.firstTokenLogProbs(promptSet);
            if (base.length != current.length) {
                throw new IllegalStateException("scorer '" + name + "': " + base.length + " base rows but "
                        + current.length + " current rows");
            }
            if (base.length == 0) {
                throw new UserInputException("scorer '" + name + "': the " + promptSet.name().toLowerCase(Locale.ROOT)
                        + " prompt set is empty; it needs at least one prompt");
            }
            double sum = 0;
            for (int i = 0; i < base.length; i++) {
                sum += divergence(base[i], current[i]);
            }
            // Each term is >= 0 up to rounding in the last bits; keep the mean from showing as -0.0000.
            return display(Math.max(0.0, sum / base.length));
        }

        private Score display(double value) {
            String text = Double.isInfinite(value) ? "inf" : Double.isNaN(value) ? "nan"
                    : String.format(Locale.ROOT, "%.4f", value);
            return new Score(value, text);
        }
    }

    /**
     * KL(P || Q) from two rows of log-probabilities, in double. Both rows are renormalized first (float32
     * log-softmax sums to 1 only within ~1e-6, which would otherwise show up as a small bias). Terms where P is
     * 0 (log -inf) contribute nothing; a token P can emit but Q cannot (Q's log -inf) makes the divergence
     * infinite, which is the honest answer. NaN inputs give NaN, which the study treats as no result.
     */
    static double divergence(float[] logP, float[] logQ) {
        if (logP.length != logQ.length) {
            throw new IllegalStateException("vocabulary sizes differ: " + logP.length + " vs " + logQ.length);
        }
        double normP = logSumExp(logP);
        double normQ = logSumExp(logQ);
        double kl = 0;
        for (int v = 0; v < logP.length; v++) {
            double lp = logP[v] - normP;
            if (lp == Double.NEGATIVE_INFINITY) {
                continue;
            }
            double lq = logQ[v] - normQ;
            kl += Math.exp(lp) * (lp - lq);
        }
        return kl;
    }

    private static double logSumExp(float[] row) {
        double max = Double.NEGATIVE_INFINITY;
        for (float x : row) {
            max = Math.max(max, x);
        }
        if (Double.isInfinite(max)) {
            return max;
        }
        double sum = 0;
        for (float x : row) {
            sum += Math.exp(x - max);
        }
        return max + Math.log(sum);
    }
}
