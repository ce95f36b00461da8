package dev.crucible.torch.train;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.LoraSettings;
import dev.crucible.api.train.OptimizerSettings;
import dev.crucible.api.train.TrainingBatch;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.torch.TorchRuntime;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/** The stories260k fixture (a real pretrained Llama, 260k parameters) and small training requests on it. */
final class Stories {
    static final String QUERY = "model.layers.0.self_attn.q_proj";
    static final String VALUE = "model.layers.0.self_attn.v_proj";
    static final String DOWN = "model.layers.4.mlp.down_proj";

    private Stories() {
    }

    static Path directory() {
        Path dir = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", "stories260k")
                .toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.isRegularFile(dir.resolve("model.safetensors")), "fixture " + dir + " is missing");
        TorchRuntime.load();
        TorchRuntime.setThreads(1);
        return dir;
    }

    static Checkpoint open() {
        return Checkpoint.open(directory());
    }

    static ModelConfig config() {
        return ModelConfig.read(directory());
    }

    static TrainingRequest lora(Checkpoint checkpoint, TrainingMethod method, DType dtype, long seed) {
        return new TrainingRequest(config(), checkpoint, method, dtype,
                new LoraSettings(4, 8, 0, false, List.of(QUERY, VALUE, DOWN)), OptimizerSettings.defaults(), seed);
    }

    static TrainingRequest full(Checkpoint checkpoint, OptimizerSettings optimizer) {
        return new TrainingRequest(config(), checkpoint, TrainingMethod.FULL, DType.F32, null, optimizer, 1);
    }

    /**
     * Two rows of token ids with the loss on their second half only: an arbitrary but fixed pattern the model has
     * never seen, so loss must fall when it learns it.
     */
    static TrainingBatch batch() {
        int[][] rows = {
            {1, 403, 407, 261, 378, 432, 300, 310, 320, 330, 340, 350, 360, 370, 380, 390},
            {1, 265, 275, 285, 295, 305, 315, 325, 335, 345, 355}};
        List<int[]> tokens = new ArrayList<>();
        List<int[]> labels = new ArrayList<>();
        for (int[] row : rows) {
            int[] label = row.clone();
            for (int i = 0; i < row.length / 2; i++) {
                label[i] = TrainingBatch.IGNORE;
            }
            tokens.add(row);
            labels.add(label);
        }
        return new TrainingBatch(tokens, labels);
    }
}
