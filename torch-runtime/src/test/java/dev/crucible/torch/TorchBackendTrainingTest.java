package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.LoraSettings;
import dev.crucible.api.train.OptimizerSettings;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.api.train.TrainingSession;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every libtorch backend trains with every method through the SPI. */
class TorchBackendTrainingTest {

    @Test
    void everyMethodIsSupportedAndStartsASession() {
        TestCpuBackend backend = new TestCpuBackend(1);
        Fixture fixture = Fixture.load("stories260k");
        for (TrainingMethod method : TrainingMethod.values()) {
            assertTrue(backend.trainingUnsupported(method).isEmpty(), method.userName());
        }
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TrainingSession session = backend.startTraining(new TrainingRequest(fixture.config(), checkpoint,
                     TrainingMethod.QLORA, DType.F32,
                     new LoraSettings(2, 4, 0, false, List.of("model.layers.1.mlp.up_proj")),
                     OptimizerSettings.defaults(), 0))) {
            assertEquals(TrainingMethod.QLORA, session.method());
            assertEquals(2 * 64 + 172 * 2, session.trainableParameters());
        }
    }
}
