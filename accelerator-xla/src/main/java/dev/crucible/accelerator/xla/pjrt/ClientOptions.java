package dev.crucible.accelerator.xla.pjrt;

import dev.crucible.api.UserInputException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * PJRT client options a user sets, e.g. {@code CRUCIBLE_PJRT_OPTIONS="preallocate=false;memory_fraction=0.7"}:
 * {@code name=value} pairs separated by {@code ;}. The value's spelling gives its PJRT type: {@code true}/{@code
 * false} a bool, an integer an int64, a decimal a float, {@code [0,1]} (or {@code 0,1}) an int64 list, anything else
 * (or anything in double quotes) a string. Names are not checked here: which options exist is the plugin's business,
 * and it rejects the ones it does not know when the client is created.
 */
public final class ClientOptions {
    /** The environment variable a user sets. */
    public static final String ENV = "CRUCIBLE_PJRT_OPTIONS";

    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_.-]*");
    private static final Pattern INTEGER = Pattern.compile("[+-]?\\d+");
    private static final Pattern DECIMAL = Pattern.compile("[+-]?(\\d+\\.\\d*|\\.\\d+|\\d+(\\.\\d*)?[eE][+-]?\\d+)");
    private static final Pattern INTEGER_LIST = Pattern.compile("\\[\\s*\\]|\\[?\\s*[+-]?\\d+(\\s*,\\s*[+-]?\\d+)*\\s*,?\\s*]?");

    private ClientOptions() {
    }

    /** The options in {@code env}'s {@value #ENV}; none when it is unset or blank. */
    public static List<NamedValue> fromEnvironment(Map<String, String> env) {
        String text = env.get(ENV);
        return text == null ? List.of() : parse(ENV, text);
    }

    /** Parses {@code text}; {@code source} names where it came from in error messages. */
    public static List<NamedValue> parse(String source, String text) {
        Map<String, NamedValue> options = new LinkedHashMap<>();
        for (String entry : text.split(";")) {
            if (entry.isBlank()) {
                continue;
            }
            int equals = entry.indexOf('=');
            if (equals < 0) {
                throw new UserInputException(source + ": '" + entry.strip() + "' is not name=value"
                        + " (example: preallocate=false;memory_fraction=0.7)");
            }
            String name = entry.substring(0, equals).strip();
            if (!NAME.matcher(name).matches()) {
                throw new UserInputException(source + ": '" + name + "' is not an option name");
            }
            NamedValue value = typed(name, entry.substring(equals + 1).strip());
            if (options.put(name, value) != null) {
                throw new UserInputException(source + ": option " + name + " is given twice");
            }
        }
        return List.copyOf(options.values());
    }

    private static NamedValue typed(String name, String value) {
        if (value.length() >= 2 && value.startsWith("\"") && value.endsWith("\"")) {
            return new NamedValue.Text(name, value.substring(1, value.length() - 1));
        }
        if (value.equalsIgnoreCase("true") || value.equalsIgnoreCase("false")) {
            return new NamedValue.Bool(name, Boolean.parseBoolean(value));
        }
        if (INTEGER.matcher(value).matches()) {
            try {
                return new NamedValue.Int64(name, Long.parseLong(value));
            } catch (NumberFormatException e) {
                throw new UserInputException("option " + name + ": " + value + " does not fit in 64 bits");
            }
        }
        if (DECIMAL.matcher(value).matches()) {
            return new NamedValue.Float32(name, Float.parseFloat(value));
        }
        if (INTEGER_LIST.matcher(value).matches() && (value.contains(",") || value.startsWith("["))) {
            List<Long> values = new ArrayList<>();
            for (String item : value.replace("[", "").replace("]", "").split(",")) {
                if (!item.isBlank()) {
                    values.add(Long.parseLong(item.strip()));
                }
            }
            return new NamedValue.Int64List(name, values);
        }
        return new NamedValue.Text(name, value);
    }
}
