package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.Test;

class TorchRuntimeTest {

    @Test
    void threadCountReachesLibtorchAndOpenBlas() {
        boolean blasSized = TorchRuntime.setThreads(1);
        assertEquals(1, TorchRuntime.threads());
        if (Loader.getPlatform().startsWith("linux")) {
            assertTrue(blasSized, "libtorch on Linux links OpenBLAS, whose pool must follow the thread count");
        }
    }

    @Test
    void openMpThreadsWaitPassivelyUnlessTheUserChose() throws Throwable {
        TorchRuntime.load();
        var linker = java.lang.foreign.Linker.nativeLinker();
        var getenv = linker.downcallHandle(linker.defaultLookup().find("getenv").orElseThrow(),
                java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.ValueLayout.ADDRESS,
                        java.lang.foreign.ValueLayout.ADDRESS));
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            var value = (java.lang.foreign.MemorySegment) getenv.invokeExact(arena.allocateFrom("OMP_WAIT_POLICY"));
            String users = System.getenv("OMP_WAIT_POLICY");
            // What libgomp read when libtorch loaded: the user's value where there was one, else PASSIVE.
            assertEquals(users == null ? "PASSIVE" : users, value.reinterpret(64).getString(0));
            assertEquals(users == null, TorchRuntime.setOpenMpWaitPolicy());
        }
    }

    @Test
    void javacppMemoryLimitsThatPollResidentMemoryAreOff() {
        TorchRuntime.load();
        assertEquals(0, Pointer.maxBytes());
        assertEquals(0, Pointer.maxPhysicalBytes());
    }

    @Test
    void loadingTwiceIsHarmlessAndThreadCountsMustBePositive() {
        TorchRuntime.load();
        TorchRuntime.load();
        assertThrows(IllegalArgumentException.class, () -> TorchRuntime.setThreads(0));
    }
}
