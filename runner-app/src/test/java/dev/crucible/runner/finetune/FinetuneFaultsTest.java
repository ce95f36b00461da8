package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.runner.Host;
import dev.crucible.runner.Mounts;
import dev.crucible.runner.RunnerEnvironment;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * "One line, exit 2, nothing lost" for {@code runner finetune}: every input and the output location are checked
 * before training, and a save that fails after training (a disk that filled up meanwhile) leaves the run resumable
 * elsewhere with the command that finishes it. The faults are real file systems (a tmpfs, mounted where the machine
 * allows it, else the test is skipped with the reason).
 */
class FinetuneFaultsTest {
    private static final Pattern RESCUE = Pattern.compile("is saved with its optimizer state in (\\S+); ");

    @TempDir
    static Path shared;
    @TempDir
    Path temp;
    private static Path model;
    private static Path data;

    @BeforeAll
    static void models() {
        model = TinyModel.write(shared.resolve("tiny"), DType.F32);
        data = TinyModel.chatData(shared.resolve("chat.jsonl"), 12);
    }

    private static List<String> finetune(Path out, String... extra) {
        List<String> args = new ArrayList<>(List.of("finetune", "--model", model.toString(), "--data", data.toString(),
                "--out", out.toString(), "--device", "cpu", "--method", "lora", "--rank", "2", "--epochs", "2",
                "--micro-batch", "4", "--grad-accum", "1"));
        args.addAll(List.of(extra));
        return args;
    }

    @Test
    void aReadOnlyOutIsRefusedBeforeAnyWork() throws IOException {
        try (Mounts mount = Mounts.tmpfs(temp.resolve("ro"), "size=4m")) {
            mount.remountReadOnly();
            Cli run = Cli.run(finetune(mount.point().resolve("adapter")).toArray(String[]::new));
            assertEquals(2, run.exit(), run.all());
            assertEquals(1, run.err().strip().lines().count(), run.err());
            assertTrue(run.err().startsWith("error: cannot write " + mount.point().resolve("adapter")), run.err());
            assertTrue(run.out().isEmpty(), "refused before reading the data or the model: " + run.out());
        }
    }

    @Test
    void anOutTooSmallForTheAdapterIsRefusedBeforeTraining() throws IOException {
        try (Mounts mount = Mounts.tmpfs(temp.resolve("small"), "size=512k")) {
            Cli run = Cli.run(finetune(mount.point().resolve("adapter"), "--rank", "2").toArray(String[]::new));
            assertEquals(2, run.exit(), run.all());
            assertTrue(run.err().contains("cannot write " + mount.point().resolve("adapter")) && run.err().contains(
                    "it needs"), run.err());
            assertEquals(1, run.err().strip().lines().count(), run.err());
            assertFalse(run.out().contains("training"), "refused before training: " + run.out());
        }
    }

    @Test
    void missingInputsAreRefusedBeforeTraining() {
        Path out = temp.resolve("never");
        Cli eval = Cli.run(finetune(out, "--eval-data", temp.resolve("held-out.jsonl").toString())
                .toArray(String[]::new));
        assertEquals(2, eval.exit(), eval.all());
        assertEquals("error: training data " + temp.resolve("held-out.jsonl") + " does not exist", eval.err().strip());
        assertFalse(eval.out().contains("training"), eval.out());
        Cli resume = Cli.run(finetune(out, "--resume", temp.resolve("nowhere").toString()).toArray(String[]::new));
        assertEquals(2, resume.exit(), resume.all());
        assertTrue(resume.err().startsWith("error: --resume: " + temp.resolve("nowhere") + " has no "
                + TrainerStateFile.FILE_NAME), resume.err());
        assertTrue(resume.out().isEmpty(), resume.out());
        assertFalse(Files.exists(out));
    }

    /**
     * A full fine-tune writes a model folder, which carries the base's chat template as every exported folder does:
     * one that does not compile is refused before training (plain-text rows never render it), not at the save.
     */
    @Test
    void aChatTemplateAModelFolderWouldCarryIsCheckedBeforeTraining() throws IOException {
        Path broken = TinyModel.write(temp.resolve("broken-template"), DType.F32);
        Path tokenizerConfig = broken.resolve("tokenizer_config.json");
        ObjectNode config = (ObjectNode) JsonMapper.builder().build().readTree(tokenizerConfig.toFile());
        config.put("chat_template", "{% for m in messages %}{{ m.content }");
        Files.writeString(tokenizerConfig, config.toString());
        Path text = Files.writeString(temp.resolve("text.jsonl"), "{\"text\": \"Pip loved to jump.\"}\n".repeat(4));
        Path out = temp.resolve("full");
        Cli run = Cli.run("finetune", "--model", broken.toString(), "--data", text.toString(), "--out", out.toString(),
                "--device", "cpu", "--method", "full", "--epochs", "1", "--micro-batch", "4", "--grad-accum", "1");
        assertEquals(2, run.exit(), run.all());
        assertEquals(1, run.err().strip().lines().count(), run.err());
        assertTrue(run.err().startsWith("error: the chat template in " + tokenizerConfig + " does not compile"), run.err());
        assertFalse(run.out().contains("training"), "refused before training: " + run.out());
        assertFalse(Files.exists(out));
    }

    @Test
    void aDiskThatFillsDuringTrainingLeavesTheRunResumableElsewhere() throws IOException {
        Rescued rescued = failThenFinish(false);
        assertTrue(rescued.message().startsWith("cannot write " + rescued.out()), rescued.message());
        assertTrue(rescued.message().contains("; the trained run is saved with its optimizer state in "
                + rescued.rescue() + "; "), rescued.message());
        assertTrue(rescued.message().endsWith("finish without training again: runner finetune --out " + rescued.out()
                + " --resume " + rescued.rescue()), rescued.message());
    }

    @Test
    void aStoppedRunWhoseSaveFailsIsSavedElsewhereAndContinues() throws IOException {
        Rescued rescued = failThenFinish(true);
        assertTrue(rescued.message().contains("; the run so far (step 1 of 6) is saved with its optimizer state in "
                + rescued.rescue()), rescued.message());
    }

    private record Rescued(String message, Path out, Path rescue) {
    }

    /**
     * Trains onto a file system that fills up after the first step (and stops there when asked), checks the failure
     * is one line naming a rescue folder with the run's state and leaves no half-written {@code --out}; then makes
     * room, finishes from the rescue and checks the result is an uninterrupted run's, bit for bit.
     */
    private Rescued failThenFinish(boolean stopAfterFirstStep) throws IOException {
        Path straight = temp.resolve("straight");
        Path rescues = Files.createDirectories(temp.resolve("rescues"));
        try (Host host = host(); Mounts mount = Mounts.tmpfs(temp.resolve("filling"), "size=4m")) {
            assertEquals(0, run(host, settings(straight, Optional.empty()), new AtomicBoolean(), r -> { }, rescues));
            Path out = mount.point().resolve("adapter");
            Path filler = mount.point().resolve("filler");
            AtomicBoolean stop = new AtomicBoolean();
            UserInputException failure = assertThrows(UserInputException.class, () -> run(host,
                    settings(out, Optional.empty()), stop, report -> {
                        stop.set(stopAfterFirstStep);
                        fill(filler);
                    }, rescues));
            String message = failure.getMessage();
            assertFalse(message.contains("\n"), message);
            Matcher saved = RESCUE.matcher(message);
            assertTrue(saved.find(), message);
            Path rescue = Path.of(saved.group(1));
            assertEquals(rescues, rescue.getParent());
            assertTrue(Files.isRegularFile(rescue.resolve(TrainerStateFile.FILE_NAME)));
            assertFalse(Files.exists(out), "no half-written --out");

            Files.delete(filler);
            assertEquals(0, run(host, settings(out, Optional.of(rescue)), new AtomicBoolean(), r -> { }, rescues));
            assertEquals(Cli.sha256(straight.resolve("adapter_model.safetensors")),
                    Cli.sha256(out.resolve("adapter_model.safetensors")), "the rescued run is the uninterrupted one");
            assertEquals(Cli.json(straight.resolve(FinetuneOutput.META_FILE)).get("loss_history"),
                    Cli.json(out.resolve(FinetuneOutput.META_FILE)).get("loss_history"));
            assertFalse(Files.exists(out.resolve(TrainerStateFile.FILE_NAME)), "a finished run leaves no state");
            return new Rescued(message, out, rescue);
        }
    }

    @Test
    void withNowhereToSaveTheLossIsSaidInOneLine() throws IOException {
        try (Host host = host(); Mounts mount = Mounts.tmpfs(temp.resolve("filling"), "size=4m")) {
            Path filler = mount.point().resolve("filler");
            UserInputException failure = assertThrows(UserInputException.class, () -> run(host,
                    settings(mount.point().resolve("adapter"), Optional.empty()), new AtomicBoolean(),
                    report -> fill(filler), List.of(mount.point())));
            assertTrue(failure.getMessage().contains("the trained run could not be saved elsewhere either, so it is "
                    + "lost (tried " + mount.point() + " ("), failure.getMessage());
            assertFalse(failure.getMessage().contains("\n"));
        }
    }

    @Test
    void theFinishingCommandIsTheOneRunWithTheRescueToResumeFrom() {
        FinetuneSettings settings = settings(temp.resolve("out"), Optional.empty());
        FinetuneSave save = FinetuneSave.check(settings, List.of("finetune", "--model", "my model", "--resume",
                "--out", "o", "--lr=1e-3", "--resume=x", "--resume", "old"), List.of());
        assertEquals("runner finetune --model 'my model' --out o --lr=1e-3 --resume '/r/it'\\''s'",
                save.resumeCommand(Path.of("/r/it's")));
    }

    private static Host host() {
        return new Host(new RunnerEnvironment(Map.of(), Optional.empty()), FinetuneFaultsTest.class.getClassLoader());
    }

    /** Fills the file system of {@code filler} up to the last byte, once. */
    private static void fill(Path filler) {
        if (Files.exists(filler)) {
            return;
        }
        // Big blocks until the first ENOSPC, then single bytes for what is left of the last page.
        for (int size : new int[] {16 * 1024, 1}) {
            byte[] block = new byte[size];
            try (OutputStream stream = Files.newOutputStream(filler, java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.APPEND)) {
                while (true) {
                    stream.write(block);
                }
            } catch (IOException full) {
                // ENOSPC: what the test wanted
            }
        }
    }

    private static int run(Host host, FinetuneSettings settings, AtomicBoolean stop, FinetuneLoop.Listener observer,
                           Path rescues) {
        return run(host, settings, stop, observer, List.of(rescues));
    }

    private static int run(Host host, FinetuneSettings settings, AtomicBoolean stop, FinetuneLoop.Listener observer,
                           List<Path> rescues) {
        StringWriter sink = new StringWriter();
        return new FinetuneRun(host, settings, new PrintWriter(sink), new PrintWriter(sink), stop, observer, false,
                List.of("finetune", "--out", settings.out().toString()), rescues).run();
    }

    private static FinetuneSettings settings(Path out, Optional<Path> resume) {
        return new FinetuneSettings(model.toString(), data, out, DeviceRequest.parse("cpu"), OptionalInt.of(1),
                Optional.of(TrainingMethod.LORA), "auto", 2, 4, 0, "auto", 2, 4, 1, false, 1024,
                ExampleEncoder.Overlong.TRUNCATE, ExampleEncoder.LossOn.ASSISTANT, 1e-2, 0.1, 0.0, 1.0, 11,
                Optional.empty(), Optional.empty(), 16, resume, false);
    }
}
