package dev.crucible.runner.abliterate;

import dev.crucible.api.UserInputException;
import java.util.Locale;

/** How an edit treats the rows of the weight it ablates (the method's {@code row_normalization}). */
public enum RowNormalization {
    /** ΔW = −w v vᵀ W: the output loses its component along v. Rank 1. */
    NONE,
    /** The same on unit-length rows, scaled back by each row's norm. Rank 1. */
    PRE,
    /** Ablate unit-length rows, restore each row's original norm, and keep a rank-r SVD of the difference. */
    FULL;

    public static RowNormalization parse(String text) {
        try {
            return valueOf(text.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new UserInputException("row_normalization '" + text + "' is not one of none, pre, full");
        }
    }
}
