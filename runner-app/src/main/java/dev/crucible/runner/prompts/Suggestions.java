package dev.crucible.runner.prompts;

import java.util.Collection;
import java.util.Comparator;
import java.util.Locale;
import java.util.Optional;

/** "did you mean" hints for misspelt keys: the closest valid name, when it is close enough to be a typo. */
public final class Suggestions {

    private Suggestions() {
    }

    /**
     * {@code "; did you mean 'n_trials'?"} for the valid name nearest to {@code given}, or "" when none is close
     * enough to be a typo.
     */
    public static String didYouMean(String given, Collection<String> valid) {
        return closest(given, valid).map(best -> "; did you mean '" + best + "'?").orElse("");
    }

    /**
     * The valid name nearest to {@code given} (case-insensitive edit distance), when it is within a third of the
     * name's length (at least two edits); beyond that a hint misleads more than it helps.
     */
    public static Optional<String> closest(String given, Collection<String> valid) {
        String needle = given.toLowerCase(Locale.ROOT);
        return valid.stream()
                .min(Comparator.comparingInt((String name) -> distance(needle, name.toLowerCase(Locale.ROOT)))
                        .thenComparing(Comparator.naturalOrder()))
                .filter(best -> distance(needle, best.toLowerCase(Locale.ROOT)) <= Math.max(2, needle.length() / 3));
    }

    /** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
    static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }
}
