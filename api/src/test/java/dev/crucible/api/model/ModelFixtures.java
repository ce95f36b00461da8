package dev.crucible.api.model;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.RecordingOps;
import dev.crucible.api.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;

/** Fixture folders and weights bound as shapes only, for tests that need no numbers. */
final class ModelFixtures {
    private ModelFixtures() {
    }

    static Path fixture(String name) {
        Path path = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", name)
                .toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.isRegularFile(path.resolve("config.json")), "fixture " + path + " is missing");
        return path;
    }

    /** The checkpoint's tensors as shapes (F32), bound by the real binder, so missing or misshaped names fail. */
    static TransformerWeights shapes(ModelConfig config, Checkpoint checkpoint, RecordingOps ops) {
        return TransformerWeights.bind(config, new WeightSource() {
            @Override
            public boolean contains(String name) {
                return checkpoint.contains(name);
            }

            @Override
            public long[] shape(String name) {
                return checkpoint.info(name).shape();
            }

            @Override
            public Tensor load(String name) {
                return ops.retain(RecordingOps.shape(DType.F32, checkpoint.info(name).shape()));
            }
        });
    }
}
