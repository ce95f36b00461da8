package dev.crucible.accelerator.xla.pjrt;

import java.util.List;
import java.util.Objects;

/**
 * What a PJRT compile is told besides the program: a serialized {@code xla.CompileOptionsProto}. One device is one
 * replica and one partition, outside SPMD (the seed's lesson: single-core runs stay out of SPMD). SPMD over N devices
 * is one replica, N partitions, SPMD partitioning on, and Shardy or GSPMD as the partitioner the program's sharding
 * annotations were written for ({@code sdy.sharding} needs {@code use_shardy_partitioner}; {@code mhlo.sharding} must
 * not have it).
 *
 * @param partitions       number of partitions (devices) the program is split over; 1 for a single device
 * @param partitioner      how sharding annotations are propagated; {@link Partitioner#NONE} for a single device
 * @param deviceAssignment the device id each partition runs on, in partition order, or empty for the plugin's default
 *                         (a topology compile needs none)
 */
public record CompileOptions(int partitions, Partitioner partitioner, List<Integer> deviceAssignment) {

    public enum Partitioner { NONE, SHARDY, GSPMD }

    // xla/pjrt/proto/compile_options.proto and xla/xla.proto (field numbers read from the protos, checked by jaxlib).
    private static final int COMPILE_OPTIONS_EXECUTABLE_BUILD_OPTIONS = 3;
    private static final int BUILD_NUM_REPLICAS = 4;
    private static final int BUILD_NUM_PARTITIONS = 5;
    private static final int BUILD_USE_SPMD_PARTITIONING = 6;
    private static final int BUILD_DEVICE_ASSIGNMENT = 9;
    private static final int BUILD_USE_SHARDY_PARTITIONER = 19;
    private static final int ASSIGNMENT_REPLICA_COUNT = 1;
    private static final int ASSIGNMENT_COMPUTATION_COUNT = 2;
    private static final int ASSIGNMENT_COMPUTATION_DEVICES = 3;
    private static final int COMPUTATION_DEVICE_REPLICA_DEVICE_IDS = 1;

    public CompileOptions {
        Objects.requireNonNull(partitioner, "partitioner is null");
        deviceAssignment = List.copyOf(deviceAssignment);
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be at least 1, got " + partitions);
        }
        if ((partitions == 1) != (partitioner == Partitioner.NONE)) {
            throw new IllegalArgumentException("one partition runs without a partitioner and several need one: "
                    + partitions + " partitions with " + partitioner);
        }
        if (!deviceAssignment.isEmpty() && deviceAssignment.size() != partitions) {
            throw new IllegalArgumentException("a device assignment names one device per partition: "
                    + deviceAssignment.size() + " devices for " + partitions + " partitions");
        }
    }

    public static CompileOptions singleDevice() {
        return new CompileOptions(1, Partitioner.NONE, List.of());
    }

    public static CompileOptions spmd(int partitions, Partitioner partitioner) {
        return new CompileOptions(partitions, partitioner, List.of());
    }

    public CompileOptions withDeviceAssignment(List<Integer> deviceIds) {
        return new CompileOptions(partitions, partitioner, deviceIds);
    }

    /** The serialized {@code CompileOptionsProto}. */
    public byte[] toProto() {
        ProtoWriter build = new ProtoWriter()
                .int64(BUILD_NUM_REPLICAS, 1)
                .int64(BUILD_NUM_PARTITIONS, partitions);
        if (partitions > 1) {
            build.bool(BUILD_USE_SPMD_PARTITIONING, true);
        }
        if (!deviceAssignment.isEmpty()) {
            ProtoWriter assignment = new ProtoWriter()
                    .int64(ASSIGNMENT_REPLICA_COUNT, 1)
                    .int64(ASSIGNMENT_COMPUTATION_COUNT, partitions);
            for (int device : deviceAssignment) {
                assignment.message(ASSIGNMENT_COMPUTATION_DEVICES,
                        new ProtoWriter().packed(COMPUTATION_DEVICE_REPLICA_DEVICE_IDS, device));
            }
            build.message(BUILD_DEVICE_ASSIGNMENT, assignment);
        }
        if (partitioner == Partitioner.SHARDY) {
            build.bool(BUILD_USE_SHARDY_PARTITIONER, true);
        }
        return new ProtoWriter().message(COMPILE_OPTIONS_EXECUTABLE_BUILD_OPTIONS, build).toByteArray();
    }
}
