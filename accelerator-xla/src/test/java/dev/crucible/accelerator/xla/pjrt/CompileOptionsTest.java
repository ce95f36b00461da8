package dev.crucible.accelerator.xla.pjrt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The bytes that compiled on libtpu (docs/pjrt.md), and jaxlib's own parser reading ours (JaxCompileOptionsTest). */
class CompileOptionsTest {
    private static byte[] hex(String text) {
        return HexFormat.of().parseHex(text.replace(" ", ""));
    }

    @Test
    void oneDeviceIsOneReplicaAndOnePartition() {
        assertArrayEquals(hex("1a 04 20 01 28 01"), CompileOptions.singleDevice().toProto());
    }

    @Test
    void spmdOverEightWithGspmdAndWithShardy() {
        assertArrayEquals(hex("1a 06 20 01 28 08 30 01"), CompileOptions.spmd(8, CompileOptions.Partitioner.GSPMD).toProto());
        assertArrayEquals(hex("1a 09 20 01 28 08 30 01 98 01 01"),
                CompileOptions.spmd(8, CompileOptions.Partitioner.SHARDY).toProto());
    }

    @Test
    void aDeviceAssignmentListsOneDevicePerPartition() {
        // device_assignment (9) = {replica_count 1, computation_count 2, computation_devices [{[5]}, {[7]}]}
        assertArrayEquals(hex("1a 16 20 01 28 02 30 01 4a 0e 08 01 10 02 1a 03 0a 01 05 1a 03 0a 01 07"),
                CompileOptions.spmd(2, CompileOptions.Partitioner.GSPMD).withDeviceAssignment(List.of(5, 7)).toProto());
    }

    @Test
    void inconsistentOptionsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> CompileOptions.spmd(1, CompileOptions.Partitioner.SHARDY));
        assertThrows(IllegalArgumentException.class, () -> new CompileOptions(2, CompileOptions.Partitioner.NONE, List.of()));
        assertThrows(IllegalArgumentException.class,
                () -> CompileOptions.spmd(2, CompileOptions.Partitioner.GSPMD).withDeviceAssignment(List.of(0)));
    }
}
