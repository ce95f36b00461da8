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
