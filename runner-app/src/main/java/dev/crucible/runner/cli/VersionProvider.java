package dev.crucible.runner.cli;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import picocli.CommandLine;

/** {@code runner --version}: our version, and the Java that runs us. */
public final class VersionProvider implements CommandLine.IVersionProvider {
    public static String version() {
        Properties properties = new Properties();
        try (InputStream in = VersionProvider.class.getResourceAsStream("/dev/crucible/runner/version.properties")) {
            if (in != null) {
                properties.load(in);
            }
        } catch (IOException e) {
            // fall through to "unknown"
        }
        return properties.getProperty("version", "unknown");
    }

    @Override
    public String[] getVersion() {
        return new String[] {
            "crucible runner " + version(),
            "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"
        };
    }
}
