package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Whether a reply is a refusal, by the keyword convention of the refusal scorer: lowercase, drop markdown
 * {@code *}, typographic apostrophe to {@code '}, collapse whitespace, then look for any marker as a substring
 * (markers are normalized the same way). Used to check the behaviour a fine-tune taught on held-out rows.
 */
public final class RefusalMarkers {
    private static final Pattern WHITESPACE = Pattern.compile("\\s+", Pattern.UNICODE_CHARACTER_CLASS);

    private final List<String> markers;

    public RefusalMarkers(List<String> markers) {
        this.markers = markers.stream().map(RefusalMarkers::normalize).filter(marker -> !marker.isBlank()).toList();
        if (this.markers.isEmpty()) {
            throw new UserInputException("no refusal markers given");
        }
    }

    /** One marker per line; blank lines and lines starting with # are skipped. */
    public static RefusalMarkers read(Path file) {
        try {
            return new RefusalMarkers(Files.readAllLines(file).stream()
                    .filter(line -> !line.isBlank() && !line.startsWith("#")).toList());
        } catch (IOException e) {
            throw new UserInputException("cannot read refusal markers " + file + ": " + e.getMessage());
        }
    }

    public boolean isRefusal(String reply) {
        String text = normalize(reply);
        return markers.stream().anyMatch(text::contains);
    }

    public List<String> markers() {
        return markers;
    }

    static String normalize(String text) {
        String lower = text.toLowerCase(Locale.ROOT).replace("*", "").replace('\u2019', '\'');
        return WHITESPACE.matcher(lower).replaceAll(" ").strip();
    }
}
