package dev.crucible.accelerator.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class MpsBackendTest {
    @Test
    void needsMacOsOnAppleSilicon() {
        assertEquals("MPS needs macOS on Apple silicon (this is Linux amd64)", new MpsBackend("Linux", "amd64", false).detect().reason());
        assertTrue(new MpsBackend("Mac OS X", "x86_64", false).detect().reason().startsWith("MPS needs macOS on Apple silicon"));
        assertTrue(new MpsBackend("Mac OS X", "aarch64", false).detect().reason().contains("macosx-arm64"));
    }
}
