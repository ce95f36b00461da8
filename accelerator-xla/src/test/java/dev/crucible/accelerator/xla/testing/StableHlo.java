package dev.crucible.accelerator.xla.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** Hand-written StableHLO programs from the test resources ({@code stablehlo/NAME.mlir}). */
public final class StableHlo {
    private StableHlo() {
    }

    public static String read(String name) {
        try (InputStream in = StableHlo.class.getResourceAsStream("/stablehlo/" + name + ".mlir")) {
            if (in == null) {
                throw new IllegalArgumentException("no test resource stablehlo/" + name + ".mlir");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
