package dev.crucible.api.backend;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link ProgramLowering#lower} wrote and, where it could compile, what the compiler said.
 *
 * @param target      what the programs were compiled for ({@code tpu, TPU v4, 8 devices}), or what they were
 *                    written for when nothing compiled
 * @param notCompiled why nothing was compiled (no compiler that works without a device), or empty
 * @param programs    every program, in the order a run first needs them
 */
public record LoweringReport(String target, Optional<String> notCompiled, List<Program> programs) {
    public LoweringReport {
        Objects.requireNonNull(target, "target is null");
        Objects.requireNonNull(notCompiled, "notCompiled is null");
        programs = List.copyOf(programs);
    }

    /**
     * One program.
     *
     * @param name        its role: {@code forward}, {@code prefill}, {@code decode_step}, ...
     * @param file        the StableHLO text's file name in the folder
     * @param manifest    its manifest's file name
     * @param arguments   how many arguments it takes
     * @param partitions  devices one run of it spans
     * @param compileTime how long the compile took, when it was compiled
     * @param memory      what the compiler says it needs of each device, when it says
     */
    public record Program(String name, String file, String manifest, int arguments, int partitions,
                          Optional<Duration> compileTime, Optional<DeviceMemory> memory) {
        public Program {
            Objects.requireNonNull(name, "name is null");
            Objects.requireNonNull(file, "file is null");
            Objects.requireNonNull(manifest, "manifest is null");
            Objects.requireNonNull(compileTime, "compileTime is null");
            Objects.requireNonNull(memory, "memory is null");
        }
    }

    /**
     * One device's memory for one run of a program, in bytes, as the compiler computed it.
     *
     * @param aliased output bytes that reuse donated arguments (counted in both, held once)
     */
    public record DeviceMemory(long code, long arguments, long outputs, long aliased, long temporaries) {
        /** What one run holds at once. */
        public long total() {
            return code + arguments + outputs - aliased + temporaries;
        }
    }
}
