package dev.crucible.runner.prompts;

import dev.crucible.api.UserInputException;
import java.util.Collection;
import java.util.Optional;

/** Picks the column that holds the prompts, the same way for every tabular format. */
final class Columns {

    static final String DEFAULT = "text";

    private Columns() {
    }

    /**
     * The requested column when the source has it; without a request {@code text}, or the only column there is.
     *
     * @throws UserInputException naming the available columns otherwise
     */
    static String choose(Optional<String> requested, Collection<String> available, String label) {
        if (requested.isPresent()) {
            if (available.contains(requested.get())) {
                return requested.get();
            }
            throw new UserInputException("'" + label + "' has no column '" + printable(requested.get()) + "'"
                    + printable(Suggestions.didYouMean(requested.get(), available)) + " (columns: " + list(available)
                    + ")");
        }
        if (available.contains(DEFAULT)) {
            return DEFAULT;
        }
        if (available.size() == 1) {
            return available.iterator().next();
        }
        if (available.isEmpty()) {
            throw new UserInputException("'" + label + "' has no columns");
        }
        String first = printable(available.iterator().next());
        throw new UserInputException("'" + label + "' has several columns (" + list(available) + ") and none is named"
                + " 'text': choose one, e.g. '" + label + ":" + first + "' or column = \"" + first + "\"");
    }

    private static String list(Collection<String> names) {
        return String.join(", ", names.stream().map(Columns::printable).toList());
    }

    /** Column names come from files; a newline in one must not break a one-line error. */
    static String printable(String name) {
        StringBuilder out = new StringBuilder(name.length());
        name.codePoints().forEach(c -> {
            if (Character.isISOControl(c)) {
                out.append(String.format("\\u%04x", c));
            } else {
                out.appendCodePoint(c);
            }
        });
        return out.toString();
    }
}
