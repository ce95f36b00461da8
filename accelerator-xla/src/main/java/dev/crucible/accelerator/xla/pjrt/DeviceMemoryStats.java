package dev.crucible.accelerator.xla.pjrt;

import java.util.OptionalLong;

/**
 * A device's allocator state ({@code PJRT_Device_MemoryStats}); the plugin fills only some fields.
 *
 * @param bytesInUse     bytes allocated now
 * @param bytesLimit     the most the allocator will hand out, where the plugin says
 * @param peakBytesInUse the high-water mark, where the plugin says
 */
public record DeviceMemoryStats(long bytesInUse, OptionalLong bytesLimit, OptionalLong peakBytesInUse) {
}
