package dev.crucible.api.model;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.RecordingOps;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import dev.crucible.api.tensor.DType;

/** Fixture folders and models placed as shapes only, for tests that need no numbers. */
final class ModelFixtures {
    private ModelFixtures() {
    }

    static Path fixture(String name) {
        Path path = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", name)
                .toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.isRegularFile(path.resolve("config.json")), "fixture " + path + " is missing");
        return path;
    }

    /**
     * The checkpoint placed as shapes only (F32) through the real placement and binder, so missing or misshaped
     * names fail.
     */
    static PlacedModel shapes(ModelConfig config, Checkpoint checkpoint, RecordingOps ops) {
        return PlacedModel.place(config, checkpoint, new Placement() {
            @Override
            public TensorOps ops() {
                return ops;
            }

            @Override
            public DType computeDtype() {
                return DType.F32;
            }

            @Override
            public Tensor toDevice(HostTensor host, DType dtype) {
                return RecordingOps.shape(dtype, host.shape());
            }
        });
    }
}
