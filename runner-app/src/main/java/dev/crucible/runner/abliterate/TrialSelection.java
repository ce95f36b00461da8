package dev.crucible.runner.abliterate;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/** Which trial to export: by number, or the best trade-off on the front. */
public final class TrialSelection {
    private TrialSelection() {
    }

    /**
     * {@code best}: among front trials whose KL divergence is at most {@code maxKl}, the fewest refusals; ties go
     * to the lower KL. The objectives named {@code refusals} and {@code kl_divergence} are used when present,
     * otherwise the first and second objective.
     */
    public static Optional<FrozenTrial> best(List<FrozenTrial> front, List<Objective> objectives, double maxKl) {
        int refusals = indexOf(objectives, "refusals", 0);
        int kl = indexOf(objectives, "kl_divergence", Math.min(1, objectives.size() - 1));
        return front.stream()
                .filter(t -> t.scores().get(kl).value() <= maxKl)
                .min(Comparator.<FrozenTrial>comparingDouble(t -> t.scores().get(refusals).value())
                        .thenComparingDouble(t -> t.scores().get(kl).value())
                        .thenComparingInt(FrozenTrial::number));
    }

    public static FrozenTrial byNumber(List<FrozenTrial> trials, int number) {
        return trials.stream().filter(t -> t.number() == number).findFirst().orElseThrow(() ->
                new UserInputException("there is no trial " + number + " in this study (it has trials 0.." + (trials.size() - 1) + ")"));
    }

    public static int parseNumber(String text) {
        try {
            return Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            throw new UserInputException("'" + text + "' is not a trial number or 'best'");
        }
    }

    private static int indexOf(List<Objective> objectives, String name, int fallback) {
        for (int i = 0; i < objectives.size(); i++) {
            if (objectives.get(i).name().equals(name)) {
                return i;
            }
        }
        return fallback;
    }
}
