package dev.crucible.runner.units;

import dev.crucible.api.UserInputException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sizes as every option and variable that takes one reads them ({@code max_shard_size} and
 * {@code --max-shard-size} of abliterate and merge, {@code CRUCIBLE_DEVICE_MEMORY}), written the way transformers'
 * {@code max_shard_size} is: a whole number, optionally followed by a unit, case ignored — {@code 5GB} (decimal,
 * 10⁹), {@code 5GiB} (binary, 2³⁰), {@code 500MB}, {@code 200KiB}, {@code 2TB}, {@code 64B}, a plain number of
 * bytes; spaces around and between are ignored. As in transformers, a lower-case {@code b} after a decimal unit
 * means bits ({@code 5Gb} is 5·10⁹/8 bytes), and fractions are refused ({@code 1500MB}, not {@code 1.5GB}).
 */
public final class ByteSize {

    private static final Pattern SIZE = Pattern.compile("\\s*(\\d+)\\s*([KMGT]i?[Bb]|B)?\\s*", Pattern.CASE_INSENSITIVE);
    private static final Pattern FRACTION = Pattern.compile("\\s*\\d*\\.\\d+\\s*([KMGT]i?[Bb]|B)?\\s*",
            Pattern.CASE_INSENSITIVE);

    private ByteSize() {
    }

    /**
     * @param where what to name in the error, e.g. {@code max_shard_size in config.toml}
     * @throws UserInputException when the text is not a size
     */
    public static long parse(String text, String where) {
        Matcher m = SIZE.matcher(text);
        if (!m.matches()) {
            if (FRACTION.matcher(text).matches()) {
                throw new UserInputException(where + " must be a whole number of bytes or of a unit, e.g. 1500MB"
                        + " rather than 1.5GB, got '" + text + "'");
            }
            throw new UserInputException(where + " must be a size like 5GB, 500MB or 2GiB, got '" + text + "'");
        }
        long number;
        try {
            number = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            throw new UserInputException(where + " is too large: '" + text + "'");
        }
        String unit = m.group(2);
        if (unit == null || unit.length() == 1) {
            return positive(number, text, where);
        }
        String upper = unit.toUpperCase(Locale.ROOT);
        int power = "KMGT".indexOf(upper.charAt(0)) + 1;
        boolean binary = upper.contains("I");
        long multiplier = 1;
        for (int i = 0; i < power; i++) {
            multiplier *= binary ? 1024 : 1000;
        }
        long bytes;
        try {
            bytes = Math.multiplyExact(number, multiplier);
        } catch (ArithmeticException e) {
            throw new UserInputException(where + " is too large: '" + text + "'");
        }
        return positive(!binary && unit.endsWith("b") ? bytes / 8 : bytes, text, where);
    }

    private static long positive(long bytes, String text, String where) {
        if (bytes <= 0) {
            throw new UserInputException(where + " must be more than zero bytes, got '" + text + "'");
        }
        return bytes;
    }

    /** The shortest exact form, e.g. 5000000000 → "5GB", 2147483648 → "2GiB", 1234 → "1234". */
    public static String format(long bytes) {
        String[] units = {"KB", "MB", "GB", "TB"};
        for (int power = 4; power >= 1; power--) {
            long decimal = (long) Math.pow(1000, power);
            long binary = 1L << (10 * power);
            if (bytes % decimal == 0) {
                return bytes / decimal + units[power - 1];
            }
            if (bytes % binary == 0) {
                return bytes / binary + units[power - 1].substring(0, 1) + "iB";
            }
        }
        return Long.toString(bytes);
    }
}
