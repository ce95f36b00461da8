package dev.crucible.api.scoring;

import dev.crucible.api.UserInputException;
import java.util.Locale;

/** What the optimizer does with a score: push it down, push it up, or only show it. */
public enum Optimization {
    MINIMIZE, MAXIMIZE, NONE;

    public static Optimization parse(String text) {
        try {
            return valueOf(text.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new UserInputException("optimization '" + text + "' is not one of minimize, maximize, none");
        }
    }
}
