package dev.crucible.accelerator.xla.exec;

import dev.crucible.api.tensor.HostTensor;
import java.lang.foreign.Arena;
import java.util.List;
import java.util.Optional;

/**
 * The five things the XLA backend asks of a runtime: compile, upload, execute, download, and donation (arguments
 * the program aliases to results are consumed by {@link #execute}). The product implementation is
 * {@link PjrtExecutor}; the tests run the same backend code on jaxlib's CPU client through another one, so that
 * bucketing, decode loops and cache donation are checked on real XLA numerics without a device.
 *
 * <p>Errors a user can act on (no device, out of device memory, rejected client options) are thrown as one-line
 * {@link dev.crucible.api.UserInputException}s; a program the compiler rejects is the program's bug and is thrown
 * as it is.
 */
public interface XlaExecutor extends AutoCloseable {
    /** e.g. {@code tpu}, {@code cuda}, {@code cpu}. */
    String platform();

    /** Devices one process can run on; a program with N partitions runs on the first N. */
    int deviceCount();

    CompiledProgram compile(Program program);

    /** What a serialized program is valid for (the runtime and its version): part of a disk cache's key. */
    default String fingerprint() {
        return platform();
    }

    /** The runtime's serialization of {@code program}, where it offers one (to keep it on disk). */
    default Optional<byte[]> serialize(CompiledProgram program) {
        return Optional.empty();
    }

    /** {@code program} loaded from what {@link #serialize} wrote, instead of compiled again. */
    default CompiledProgram deserialize(Program program, byte[] serialized) {
        throw new UnsupportedOperationException("the " + platform() + " runtime cannot load serialized programs");
    }

    /** The bytes device {@code device} can hold, where the runtime says. */
    default java.util.OptionalLong deviceMemory(int device) {
        return java.util.OptionalLong.empty();
    }

    /**
     * Whether programs run and arrays hold values. A compile-only executor ({@link CompileOnlyExecutor}) answers
     * false: its arrays are shapes, its executions produce shapes, and reads give zeros.
     */
    default boolean computes() {
        return true;
    }

    /** An array of {@code dtype} and {@code shape} that holds no values: only a compile-only executor has them. */
    default DeviceArray placeholder(dev.crucible.api.tensor.DType dtype, long[] shape, int device) {
        throw new UnsupportedOperationException("the " + platform() + " runtime keeps no arrays without values");
    }

    /** Copies {@code tensor} to device {@code device} (an index below {@link #deviceCount()}). */
    DeviceArray upload(HostTensor tensor, int device);

    /**
     * Runs {@code program} with one argument list per partition (device {@code i} takes list {@code i}), each
     * matching the manifest, and returns one result list per partition. Arguments the manifest donates are
     * released when the execution succeeds.
     */
    List<List<DeviceArray>> execute(CompiledProgram program, List<List<DeviceArray>> argumentsPerDevice);

    /** Copies {@code array} to the host, named {@code name}, in memory owned by {@code into}. */
    HostTensor download(DeviceArray array, String name, Arena into);

    /** Closes what is still open (arrays, programs) and the runtime connection. */
    @Override
    void close();
}
