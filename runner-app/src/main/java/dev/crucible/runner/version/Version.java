package dev.crucible.runner.version;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** The version this runner was built as, which exports, study keys and {@code runner --version} record. */
public final class Version {
    private Version() {
    }

    /** From the build's {@code version.properties}; "unknown" when the resource is missing (a bare class folder). */
    public static String current() {
        Properties properties = new Properties();
        try (InputStream in = Version.class.getResourceAsStream("/dev/crucible/runner/version.properties")) {
            if (in != null) {
                properties.load(in);
            }
        } catch (IOException e) {
            // fall through to "unknown"
        }
        return properties.getProperty("version", "unknown");
    }
}
