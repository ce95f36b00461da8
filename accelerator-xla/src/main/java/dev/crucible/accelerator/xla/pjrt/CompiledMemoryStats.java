package dev.crucible.accelerator.xla.pjrt;

/**
 * What an executable needs of each device's memory, as the compiler computed it
 * ({@code PJRT_Executable_GetCompiledMemoryStats}; device memory, e.g. HBM). Arguments, outputs and temporaries
 * add up to what one run holds at once, less {@code aliasBytes} that outputs reuse from donated arguments.
 */
public record CompiledMemoryStats(long generatedCodeBytes, long argumentBytes, long outputBytes, long aliasBytes,
                                  long temporaryBytes, long hostArgumentBytes, long hostOutputBytes,
                                  long hostTemporaryBytes) {

    /** Device bytes one run holds at once. */
    public long totalDeviceBytes() {
        return generatedCodeBytes + argumentBytes + outputBytes - aliasBytes + temporaryBytes;
    }
}
