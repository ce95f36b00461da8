package dev.crucible.api.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.tensor.DType;
import java.util.List;
import org.junit.jupiter.api.Test;

class TrainingSpiTest {

    /** A backend written before training existed still compiles and says plainly that it cannot train. */
    @Test
    void aBackendWithoutTrainingSaysSo() {
        HardwareBackend<BackendEnvironment, DeviceModel> inferenceOnly = new HardwareBackend<>() {
            @Override
            public int spiVersion() {
                return SPI_VERSION;
            }

            @Override
            public String id() {
                return "npu";
            }

            @Override
            public int priority() {
                return 1;
            }

            @Override
            public Probe detect() {
                return Probe.unavailable("test");
            }

            @Override
            public BackendEnvironment setupEnvironment(SetupRequest request) {
                return request::device;
            }

            @Override
            public DType chooseDtype(DType checkpointDtype) {
                return DType.F32;
            }

            @Override
            public String emptyCache(BackendEnvironment environment) {
                return "";
            }
        };
        for (TrainingMethod method : TrainingMethod.values()) {
            assertEquals("the npu backend cannot fine-tune models yet",
                    inferenceOnly.trainingUnsupported(method).orElseThrow());
        }
        assertThrows(UnsupportedOperationException.class, () -> inferenceOnly.startTraining(null, null));
    }

    @Test
    void loraScaleIsAlphaOverRankOrOverItsRootWithRsLora() {
        assertEquals(2.0, new LoraSettings(16, 32, 0, false, List.of("m")).scale());
        assertEquals(8.0, new LoraSettings(16, 32, 0, true, List.of("m")).scale());
        assertThrows(IllegalArgumentException.class, () -> new LoraSettings(0, 32, 0, false, List.of("m")));
        assertThrows(IllegalArgumentException.class, () -> new LoraSettings(8, 16, 1.0, false, List.of("m")));
    }

    @Test
    void labelledTokensSkipIgnoredPositionsAndTheFirstOne() {
        int ignore = TrainingBatch.IGNORE;
        TrainingBatch batch = new TrainingBatch(List.of(new int[] {5, 6, 7, 8}, new int[] {9, 10}),
                List.of(new int[] {5, ignore, 7, 8}, new int[] {9, 10}));
        assertEquals(3, batch.labelledTokens(), "positions 2 and 3 of row one, position 1 of row two");
        assertEquals(6, batch.tokenCount());
        assertThrows(IllegalArgumentException.class,
                () -> new TrainingBatch(List.of(new int[] {1, 2}), List.of(new int[] {1})));
    }

    @Test
    void methodsParseAsTheCommandLineSpellsThem() {
        assertEquals(TrainingMethod.QLORA, TrainingMethod.parse("QLoRA"));
        assertTrue(TrainingMethod.LORA.trainsAdapters());
        assertTrue(!TrainingMethod.FULL.trainsAdapters());
        UserInputException error = assertThrows(UserInputException.class, () -> TrainingMethod.parse("dora"));
        assertTrue(error.getMessage().contains("auto, lora, qlora, full"));
    }
}
