package dev.crucible.accelerator.xla;

import dev.crucible.api.backend.Probe;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** Detection over a given site-packages folder and no PCI bus, for tests outside this package. */
public final class XlaBackends {
    private XlaBackends() {
    }

    public static Probe probeWithSitePackages(Path sitePackages) {
        return new XlaBackend(new PjrtPluginLocator(Map.of(), Path.of("/nonexistent-pci"), List.of(sitePackages)), Map.of())
                .detect();
    }
}
