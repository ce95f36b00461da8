package dev.crucible.accelerator.xla.pjrt;

import java.util.List;

/**
 * A PJRT call that failed: the function, the plugin's status code and its message, verbatim. Every
 * {@code PJRT_Error*} a plugin returns becomes one of these (and is destroyed first); nothing else in the bridge
 * throws for a plugin's failure.
 */
public final class PjrtException extends RuntimeException {
    /** absl status codes, as {@code PJRT_Error_Code} numbers them (0 is OK and never thrown). */
    private static final List<String> CODES = List.of("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
            "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE",
            "DATA_LOSS", "UNAUTHENTICATED");

    public static final int INVALID_ARGUMENT = 3;
    public static final int NOT_FOUND = 5;
    public static final int RESOURCE_EXHAUSTED = 8;
    public static final int UNIMPLEMENTED = 12;
    public static final int INTERNAL = 13;

    private final String function;
    private final int code;
    private final String pluginMessage;

    public PjrtException(String function, int code, String pluginMessage) {
        super(function + " failed: " + codeName(code) + ": " + pluginMessage);
        this.function = function;
        this.code = code;
        this.pluginMessage = pluginMessage;
    }

    /** The C function that failed, e.g. {@code PJRT_Client_Create}. */
    public String function() {
        return function;
    }

    /** The plugin's {@code PJRT_Error_Code}. */
    public int code() {
        return code;
    }

    public String codeName() {
        return codeName(code);
    }

    /** The plugin's message, as it wrote it (possibly several lines). */
    public String pluginMessage() {
        return pluginMessage;
    }

    /** The plugin's message on one line: the first line that says something, whitespace collapsed. */
    public String pluginMessageLine() {
        for (String line : pluginMessage.split("\\R")) {
            String trimmed = line.strip();
            if (!trimmed.isEmpty()) {
                return trimmed.replaceAll("\\s+", " ");
            }
        }
        return codeName();
    }

    static String codeName(int code) {
        return code >= 0 && code < CODES.size() ? CODES.get(code) : "code " + code;
    }
}
