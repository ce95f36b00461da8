package dev.crucible.runner.prompts;

import dev.crucible.api.UserInputException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which rows of a prompt source to use, written the way Hugging Face {@code datasets} writes splits:
 * {@code train}, {@code train[:400]}, {@code test[100:200]}, {@code train[-50:]}, or only a slice {@code [:400]}.
 * The slice has Python semantics (negative indices count from the end, bounds are clamped, no step).
 */
public record SplitSlice(Optional<String> split, OptionalInt start, OptionalInt stop) {

    /** Every row of the default split. */
    public static final SplitSlice ALL = new SplitSlice(Optional.empty(), OptionalInt.empty(), OptionalInt.empty());

    private static final Pattern SPLIT_NAME = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.-]*");
    private static final Pattern FORM = Pattern.compile("(?<split>[^\\[\\]]*)(\\[(?<slice>[^\\[\\]]*)])?");
    private static final Pattern SLICE = Pattern.compile("\\s*(?<start>[+-]?\\d+)?\\s*:\\s*(?<stop>[+-]?\\d+)?\\s*");

    public SplitSlice {
        Objects.requireNonNull(split, "split is null");
        Objects.requireNonNull(start, "start is null");
        Objects.requireNonNull(stop, "stop is null");
        split.ifPresent(name -> {
            if (!SPLIT_NAME.matcher(name).matches()) {
                throw new UserInputException("'" + name + "' is not a split name like train or test");
            }
        });
    }

    /**
     * Parses {@code name}, {@code name[start:stop]} or {@code [start:stop]}; blank means {@link #ALL}.
     *
     * @throws UserInputException naming the text when it is neither
     */
    public static SplitSlice parse(String text) {
        Objects.requireNonNull(text, "text is null");
        Matcher form = FORM.matcher(text.strip());
        if (!form.matches()) {
            throw new UserInputException("'" + text + "' is not a split like train, train[:400], test[100:200]"
                    + " or [-50:]");
        }
        String name = form.group("split").strip();
        Optional<String> split = name.isEmpty() ? Optional.empty() : Optional.of(name);
        if (form.group("slice") == null) {
            return new SplitSlice(split, OptionalInt.empty(), OptionalInt.empty());
        }
        Matcher slice = SLICE.matcher(form.group("slice"));
        if (!slice.matches()) {
            throw new UserInputException("'[" + form.group("slice") + "]' in '" + text + "' is not a slice like"
                    + " [:400], [100:200] or [-50:] (whole numbers, no step)");
        }
        return new SplitSlice(split, bound(slice.group("start"), text), bound(slice.group("stop"), text));
    }

    private static OptionalInt bound(String digits, String text) {
        if (digits == null) {
            return OptionalInt.empty();
        }
        try {
            return OptionalInt.of(Integer.parseInt(digits));
        } catch (NumberFormatException tooLarge) {
            throw new UserInputException("slice bound " + digits + " in '" + text + "' is too large");
        }
    }

    public boolean hasSlice() {
        return start.isPresent() || stop.isPresent();
    }

    /** This slice with another split name (kept or replaced). */
    public SplitSlice withSplit(Optional<String> name) {
        return new SplitSlice(name, start, stop);
    }

    /** The rows {@code items[start:stop]} as Python would pick them. */
    public <T> List<T> apply(List<T> items) {
        int size = items.size();
        int from = clamp(start.orElse(0), size);
        int to = stop.isPresent() ? clamp(stop.getAsInt(), size) : size;
        return from >= to ? List.of() : List.copyOf(items.subList(from, to));
    }

    private static int clamp(int index, int size) {
        int absolute = index < 0 ? index + size : index;
        return Math.max(0, Math.min(size, absolute));
    }

    /** The slice part alone, e.g. {@code [:400]}; empty when there is none. */
    public String sliceText() {
        if (!hasSlice()) {
            return "";
        }
        return "[" + (start.isPresent() ? start.getAsInt() : "") + ":" + (stop.isPresent() ? stop.getAsInt() : "")
                + "]";
    }

    @Override
    public String toString() {
        return split.orElse("") + sliceText();
    }
}
