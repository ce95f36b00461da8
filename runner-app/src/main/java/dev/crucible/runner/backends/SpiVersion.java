package dev.crucible.runner.backends;

import dev.crucible.api.backend.HardwareBackend;
import java.util.Optional;

/** The backend SPI check: a plugin built against another version of the api is refused before anything calls it. */
public final class SpiVersion {
    private SpiVersion() {
    }

    /** Empty when {@code backend} was built for this runner's {@link HardwareBackend#SPI_VERSION}; else why not. */
    public static Optional<String> refusal(HardwareBackend<?, ?> backend) {
        int version;
        try {
            version = backend.spiVersion();
        } catch (AbstractMethodError e) {
            return Optional.of("backend '" + backend.id() + "' declares no backend SPI version (it predates them), "
                    + "this runner has SPI " + HardwareBackend.SPI_VERSION + "; " + REBUILD);
        }
        if (version == HardwareBackend.SPI_VERSION) {
            return Optional.empty();
        }
        return Optional.of("backend '" + backend.id() + "' was built for backend SPI " + version
                + ", this runner has SPI " + HardwareBackend.SPI_VERSION + "; " + REBUILD);
    }

    private static final String REBUILD = "rebuild it against this runner's dev.crucible:api";
}
