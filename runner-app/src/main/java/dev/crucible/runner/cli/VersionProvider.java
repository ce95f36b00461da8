package dev.crucible.runner.cli;

import dev.crucible.runner.version.Version;
import picocli.CommandLine;

/** {@code runner --version}: our version, and the Java that runs us. */
public final class VersionProvider implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
        return new String[] {
            "crucible runner " + Version.current(),
            "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"
        };
    }
}
