package dev.crucible.accelerator.xla.pjrt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.api.UserInputException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The version check on function tables laid out here, so no plugin is needed to see a refusal. */
class PjrtApiTableTest {
    private static MemorySegment table(Arena arena, long structSize, int major, int minor) {
        MemorySegment table = arena.allocate(Math.max(structSize, 40), 8);
        table.set(ValueLayout.JAVA_LONG, 0, structSize);
        table.set(ValueLayout.JAVA_LONG, 16, 24);
        table.set(ValueLayout.JAVA_INT, 32, major);
        table.set(ValueLayout.JAVA_INT, 36, minor);
        return table; // every function pointer NULL: the bridge must not call any of them to read the version
    }

    @Test
    void aMajorVersionOtherThanZeroIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            UserInputException e = assertThrows(UserInputException.class,
                    () -> PjrtApi.fromTable(Path.of("/opt/x/plugin.so"), table(arena, 1144, 1, 0)));
            assertEquals("PJRT plugin /opt/x/plugin.so speaks PJRT C API 1.0; this build of Crucible speaks 0.x",
                    e.getMessage());
        }
    }

    @Test
    void aTableThatEndsBeforeASlotWeCallIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            // API 0.60-sized: 96 slots, so GetCompiledMemoryStats (slot 96) is missing.
            long size = Slot.FIRST_SLOT_OFFSET + 8 * 96;
            UserInputException e = assertThrows(UserInputException.class,
                    () -> PjrtApi.fromTable(Path.of("old.so"), table(arena, size, 0, 60)));
            assertEquals("PJRT plugin old.so (PJRT C API 0.60) is too old: its function table has 808 bytes and lacks "
                    + "PJRT_Executable_GetCompiledMemoryStats; install a newer plugin", e.getMessage());
        }
    }

    @Test
    void aFunctionThePluginLeftNullIsReportedWhenCalled() {
        try (Arena arena = Arena.ofConfined()) {
            PjrtApi api = PjrtApi.fromTable(Path.of("sparse.so"), table(arena, 1144, 0, 112));
            PjrtException e = assertThrows(PjrtException.class,
                    () -> api.call(arena, Slot.CLIENT_CREATE, a -> { }));
            assertEquals(PjrtException.UNIMPLEMENTED, e.code());
            assertEquals("the plugin sparse.so does not offer PJRT_Client_Create", e.pluginMessage());
        }
    }
}
