package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.runner.Host;
import dev.crucible.runner.RunnerEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What Ctrl+C does, driven through the stop flag the signal handler raises: the run stops between steps, saves the
 * adapter so far with its optimizer state, and {@code --resume} finishes with the very bytes of a run that was
 * never stopped.
 */
class StopAndResumeTest {
    @TempDir
    Path temp;

    @Test
    void aStoppedRunSavesAndItsResumptionEqualsAnUninterruptedRun() throws Exception {
        Path model = TinyModel.write(temp.resolve("model"), DType.F32);
        Path data = TinyModel.chatData(temp.resolve("chat.jsonl"), 12);
        Path straight = temp.resolve("straight");
        Path stopped = temp.resolve("stopped");
        try (Host host = new Host(new RunnerEnvironment(Map.of(), Optional.empty()), getClass().getClassLoader())) {
            assertEquals(0, run(host, settings(model, data, straight, false), new AtomicBoolean(), -1));

            AtomicBoolean stop = new AtomicBoolean();
            assertEquals(FinetuneRun.EXIT_INTERRUPTED, run(host, settings(model, data, stopped, false), stop, 2));
            assertTrue(Files.isRegularFile(stopped.resolve("adapter_model.safetensors")), "the adapter so far is saved");
            assertTrue(Files.isRegularFile(stopped.resolve(TrainerStateFile.FILE_NAME)));
            JsonNode meta = Cli.json(stopped.resolve(FinetuneOutput.META_FILE));
            assertTrue(meta.get("stopped").asBoolean());
            assertEquals(2, meta.get("completed_steps").asInt());
            assertEquals(2, meta.get("loss_history").size());

            UserInputException other = org.junit.jupiter.api.Assertions.assertThrows(UserInputException.class,
                    () -> run(host, withSeed(settings(model, data, stopped, true), 99), new AtomicBoolean(), -1));
            assertTrue(other.getMessage().contains("used other settings or data"), other.getMessage());

            assertEquals(0, run(host, settings(model, data, stopped, true), new AtomicBoolean(), -1));
            assertEquals(Cli.sha256(straight.resolve("adapter_model.safetensors")),
                    Cli.sha256(stopped.resolve("adapter_model.safetensors")), "resumed = uninterrupted, bit for bit");
            JsonNode resumed = Cli.json(stopped.resolve(FinetuneOutput.META_FILE));
            assertFalse(resumed.get("stopped").asBoolean());
            assertEquals(Cli.json(straight.resolve(FinetuneOutput.META_FILE)).get("loss_history"),
                    resumed.get("loss_history"), "the history runs on from the stopped run's");
            assertFalse(Files.exists(stopped.resolve(TrainerStateFile.FILE_NAME)), "a finished run leaves no state");
        }
    }

    /** Runs and raises the stop flag once {@code stopAfter} steps are done (never when negative). */
    private static int run(Host host, FinetuneSettings settings, AtomicBoolean stop, int stopAfter) {
        StringWriter sink = new StringWriter();
        return new FinetuneRun(host, settings, new PrintWriter(sink), new PrintWriter(sink), stop, report -> {
            if (report.step() == stopAfter) {
                stop.set(true);
            }
        }, false, List.of(), List.of()).run();
    }

    private static FinetuneSettings settings(Path model, Path data, Path out, boolean resume) {
        return new FinetuneSettings(model.toString(), data, out, DeviceRequest.parse("cpu"), OptionalInt.of(1),
                Optional.of(TrainingMethod.LORA), "auto", 2, 4, 0, "auto", 2, 4, 1, false, 1024,
                ExampleEncoder.Overlong.TRUNCATE, ExampleEncoder.LossOn.ASSISTANT, 1e-2, 0.1, 0.0, 1.0, 11, Optional.empty(), Optional.empty(), 16,
                resume ? Optional.of(out) : Optional.empty(), false);
    }

    private static FinetuneSettings withSeed(FinetuneSettings s, long seed) {
        return new FinetuneSettings(s.model(), s.data(), s.out(), s.device(), s.threads(), s.method(), s.dtype(),
                s.rank(), s.alpha(), s.dropout(), s.targetModules(), s.epochs(), s.microBatch(), s.gradAccum(),
                s.groupByLength(), s.maxLength(), s.overlong(), s.lossOn(), s.learningRate(), s.warmupRatio(), s.weightDecay(),
                s.maxGradNorm(), seed, s.evalData(), s.refusalMarkers(), s.evalMaxNewTokens(), s.resume(), s.force());
    }
}
