package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.SafetensorsFile;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.train.TrainerState;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code trainer_state.safetensors}: a stopped run's {@link TrainerState} (parameters and AdamW moments as float32
 * tensors, the step count and a fingerprint of the run's settings and data in the metadata), which
 * {@code --resume} reads back. Written only when a run stops early, or beside a finished run's output when that
 * could not be written to {@code --out} ({@link FinetuneSave}).
 */
public final class TrainerStateFile {
    public static final String FILE_NAME = "trainer_state.safetensors";
    private static final String STEPS = "completed_steps";
    private static final String FINGERPRINT = "run_fingerprint";

    private TrainerStateFile() {
    }

    public static void write(Path folder, TrainerState state, String fingerprint) {
        List<WritableTensor> tensors = new ArrayList<>();
        state.tensors().forEach((name, tensor) -> tensors.add(new WritableTensor(name, tensor.dtype(),
                tensor.shape(), tensor.data())));
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put(STEPS, Long.toString(state.completedSteps()));
        metadata.put(FINGERPRINT, fingerprint);
        SafetensorsWriter.write(folder.resolve(FILE_NAME), tensors, metadata);
    }

    /** The state file in {@code folder}; a one-line error when there is none. */
    public static Path requireIn(Path folder) {
        Path file = folder.resolve(FILE_NAME);
        if (!Files.isRegularFile(file)) {
            throw new UserInputException("--resume: " + folder + " has no " + FILE_NAME
                    + " (only a run stopped early, or saved elsewhere when --out could not be written, leaves one)");
        }
        return file;
    }

    /** The state saved in {@code folder}, checked against this run's fingerprint. */
    public static TrainerState read(Path folder, String fingerprint) {
        Path file = requireIn(folder);
        try (SafetensorsFile saved = SafetensorsFile.open(file)) {
            String savedPrint = saved.metadata().get(FINGERPRINT);
            if (!fingerprint.equals(savedPrint)) {
                throw new UserInputException("--resume: the stopped run in " + folder + " used other settings or data; "
                        + "resume with the same command line it was started with");
            }
            Map<String, HostTensor> tensors = new LinkedHashMap<>();
            for (String name : saved.tensors().keySet()) {
                HostTensor tensor = saved.tensor(name);
                // Copied to the heap: the file's mapping closes with it.
                MemorySegment copy = MemorySegment.ofArray(tensor.toByteArray());
                tensors.put(name, new HostTensor(name, tensor.dtype(), tensor.shape(), copy));
            }
            return new TrainerState(Long.parseLong(saved.metadata().get(STEPS)), tensors);
        }
    }
}
