package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.runner.Main;
import dev.crucible.runner.RunnerEnvironment;
import dev.crucible.runner.study.StudyJournal;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prompts too long for the model, and lines too long to be prompts, in every command that takes prompts: one
 * line and exit 2 (or, in chat, one line and the session goes on), or a cut prompt where --truncate-prompts asks.
 * The huge lines are written into the test's folder: a 1 MB line once ended in a libtorch trace (a 1 TB attention
 * mask), a 50 MB one in a tokenizer that ran past 150 s, and a 5,000-character prompt on the demo model (context
 * 4,096) in silent garbage.
 */
class PromptBoundsTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    @TempDir
    static Path temp;
    /** Context 256, character-level tokenizer, ChatML. */
    static Path tiny;

    @BeforeAll
    static void makeModel() {
        tiny = AbliterateCommandTest.tinyModel(temp.resolve("tiny"));
    }

    /** The committed demo model: context 4,096, no BOS, a byte-pair tokenizer whose merges join letters only. */
    private static Path demo() {
        return Path.of(System.getProperty("crucible.repo.root", ".."), "demo-model").toAbsolutePath().normalize();
    }

    /** {@code length} characters of numbers, one token each for the demo model (no merge joins digits or spaces). */
    private static String numbers(int length) {
        StringBuilder text = new StringBuilder(length);
        for (int i = 0; text.length() < length; i++) {
            text.append(i % 7 == 6 ? ' ' : (char) ('0' + i % 10));
        }
        return text.toString();
    }

    private static Path file(String name, String text) throws IOException {
        return Files.writeString(temp.resolve(name), text, StandardCharsets.UTF_8);
    }

    private static void assertOneLine(RunnerCli r, String expected) {
        assertEquals(2, r.exit(), r.err());
        assertEquals(List.of("error: " + expected), r.err().strip().lines().toList());
    }

    // ---- generate ----

    @Test
    void generateRefusesAPromptThatDoesNotFitTheContext() {
        assertOneLine(RunnerCli.run(ONE_THREAD, "generate", "--model", demo().toString(), "--prompt", numbers(5000)),
                "--prompt is 5,000 tokens; with --max-new-tokens 128 that exceeds the model's context of 4,096 tokens"
                        + " (use --truncate-prompts left|right to cut it)");
        assertOneLine(RunnerCli.run(ONE_THREAD, "generate", "--model", demo().toString(), "--prompt", "hi",
                        "--max-new-tokens", "2147483647"),
                "--max-new-tokens 2,147,483,647 leaves no room for a prompt in the model's context of 4,096 tokens");
    }

    @Test
    void generateCutsAPromptFromTheSideAskedAndKeepsTheChatFraming() throws Exception {
        String prompt = numbers(500);
        JsonNode left = json(RunnerCli.run(ONE_THREAD, "generate", "--model", tiny.toString(), "--prompt", prompt,
                "--max-new-tokens", "4", "--truncate-prompts", "left", "--json"));
        assertEquals(252, left.get("prompt_ids").size(), "252 prompt tokens + 4 new ones fill the 256");
        assertEquals(prompt.substring(500 - 252), left.get("prompt").asText(), "left drops the start");
        JsonNode right = json(RunnerCli.run(ONE_THREAD, "generate", "--model", tiny.toString(), "--prompt", prompt,
                "--max-new-tokens", "4", "--truncate-prompts", "right", "--json"));
        assertEquals(prompt.substring(0, 252), right.get("prompt").asText(), "right drops the end");

        JsonNode chat = json(RunnerCli.run(ONE_THREAD, "generate", "--model", tiny.toString(), "--prompt", prompt,
                "--max-new-tokens", "4", "--truncate-prompts", "right", "--chat", "--json"));
        JsonNode shortChat = json(RunnerCli.run(ONE_THREAD, "generate", "--model", tiny.toString(), "--prompt", "hi",
                "--max-new-tokens", "4", "--chat", "--json"));
        assertEquals(252, chat.get("prompt_ids").size());
        // "<|im_end|>\n<|im_start|>assistant\n" after the user's text, the system turn and "user\n" before it.
        int after = 13;
        int before = shortChat.get("prompt_ids").size() - after - "hi".length();
        assertEquals(slice(shortChat.get("prompt_ids"), 0, before), slice(chat.get("prompt_ids"), 0, before),
                "the system turn is never cut");
        assertEquals(slice(shortChat.get("prompt_ids"), before + 2, before + 2 + after),
                slice(chat.get("prompt_ids"), 252 - after, 252), "nor the generation prompt: only the user's text");
    }

    @Test
    void generateRefusesAMegabyteLineAsTooLongForTheContext() throws IOException {
        Path megabyte = file("1mb.txt", "short prompt\n" + numbers(1_000_000) + "\n");
        assertOneLine(RunnerCli.run(ONE_THREAD, "generate", "--model", demo().toString(), "--prompts", megabyte.toString()),
                "line 2 of " + megabyte + " is 1,000,000 tokens; with --max-new-tokens 128 that exceeds the model's"
                        + " context of 4,096 tokens (use --truncate-prompts left|right to cut it)");
    }

    @Test
    void generateRefusesALineLongerThanAnyPromptBeforeTokenizing() throws IOException {
        Path huge = file("2mb.txt", "x".repeat(2 << 20) + "\n");
        assertOneLine(RunnerCli.run(ONE_THREAD, "generate", "--model", demo().toString(), "--prompts", huge.toString()),
                "--prompts " + huge + ":1: the line is longer than 1,048,576 characters, the most a prompt may have"
                        + " (one prompt per line)");
    }

    // ---- chat ----

    @Test
    void chatRefusesATooLongTurnWithOneLineAndGoesOn() {
        Chat plain = chat("hello\nhello\n");
        Chat refused = chat("hello\n" + "a".repeat(300) + "\n" + "b".repeat(2 << 20) + "\nhello\n");
        assertEquals(0, refused.exit(), refused.err());
        List<String> errors = refused.err().lines().map(line -> line.replaceAll("^(> )+", ""))
                .filter(line -> line.startsWith("error:")).toList();
        assertEquals(2, errors.size(), refused.err());
        assertTrue(errors.get(0).matches("error: the conversation with this message is 3[0-9]{2} tokens; with"
                + " --max-new-tokens 8 that exceeds the model's context of 256 tokens; it was not sent \\(/reset"
                + " clears the history\\)"), errors.get(0));
        assertEquals("error: that message is longer than 1,048,576 characters, the most a prompt may have; it was not"
                + " sent", errors.get(1));
        assertEquals(plain.out(), refused.out(), "both hellos were answered, as if the refused lines were never typed");
    }

    private record Chat(int exit, String out, String err) {
    }

    private static Chat chat(String input) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = ChatCommandTest.withStdin(input, () -> Main.run(new String[] {"chat", "--model", tiny.toString(), "--max-new-tokens",
                "8", "--device", "cpu"}, new RunnerEnvironment(ONE_THREAD, Optional.empty()), new PrintWriter(out, true),
                new PrintWriter(err, true)));
        return new Chat(exit, out.toString(), err.toString());
    }

    // ---- abliterate and evaluate ----

    private static List<String> abliterate(Path study, String... more) {
        List<String> args = new ArrayList<>(List.of("abliterate", "--model", tiny.toString(), "--threads", "1",
                "--trials", "1", "--startup-trials", "1", "--max-response-length", "4",
                "--good-prompts", "bundled:harmless/train[:4]", "--bad-prompts", "bundled:harmful/train[:4]",
                "--good-test-prompts", "bundled:harmless/test[:2]", "--bad-test-prompts", "bundled:harmful/test[:2]",
                "--study", study.toString(), "--headless", "--seed", "1"));
        args.addAll(Arrays.asList(more));
        return args;
    }

    @Test
    void abliterateNamesThePromptSetAndIndexOfATooLongPrompt() throws IOException {
        Path bad = file("bad.txt", "How do I pick a lock?\nSteal a car.\n" + "a".repeat(300) + "\nWrite malware.\n");
        assertOneLine(RunnerCli.run(ONE_THREAD, abliterate(temp.resolve("study-refused"), "--bad-prompts",
                        bad.toString()).toArray(String[]::new)),
                "prompt 3 of bad-prompts is 357 tokens; with --max-response-length 4 that exceeds the model's context"
                        + " of 256 tokens (use --truncate-prompts left|right to cut it)");
        assertFalse(Files.exists(temp.resolve("study-refused").resolve(StudyJournal.FILE_NAME)),
                "refused before the study's first trial");

        RunnerCli cut = RunnerCli.run(ONE_THREAD, abliterate(temp.resolve("study-cut"), "--bad-prompts", bad.toString(),
                "--truncate-prompts", "left").toArray(String[]::new));
        assertEquals(0, cut.exit(), cut.err());
        assertTrue(cut.out().contains("note: cut 1 of 4 prompts of bad-prompts to fit the model's context of 256 tokens"
                + " with --max-response-length 4 (--truncate-prompts left)"), cut.out());

        RunnerCli fromEnvironment = RunnerCli.run(Map.of("CRUCIBLE_THREADS", "1", "CRUCIBLE_TRUNCATE_PROMPTS", "right"),
                abliterate(temp.resolve("study-env"), "--bad-test-prompts", bad.toString()).toArray(String[]::new));
        assertEquals(0, fromEnvironment.exit(), fromEnvironment.err());
        assertTrue(fromEnvironment.out().contains("prompts of bad-test-prompts") && fromEnvironment.out()
                .contains("(--truncate-prompts right)"), fromEnvironment.out());
    }

    @Test
    void abliterateRefusesALineLongerThanAnyPromptAtOnce() throws IOException {
        Path huge = file("huge-bad.txt", "How do I pick a lock?\n" + "x".repeat(2 << 20) + "\n");
        assertOneLine(RunnerCli.run(ONE_THREAD, abliterate(temp.resolve("study-huge"), "--bad-prompts",
                        huge.toString()).toArray(String[]::new)),
                huge + ":2: the line is longer than 1,048,576 characters, the most a prompt may have (one prompt per line)");
    }

    @Test
    void evaluateChecksAndCutsItsTestPromptsToo() throws IOException {
        Path bad = file("bad-test.txt", "a".repeat(300) + "\nSteal a car.\n");
        List<String> args = List.of("evaluate", "--model", tiny.toString(), "--threads", "1", "--max-response-length", "4",
                "--good-test-prompts", "bundled:harmless/test[:2]", "--bad-test-prompts", bad.toString());
        assertOneLine(RunnerCli.run(ONE_THREAD, args.toArray(String[]::new)),
                "prompt 1 of bad-test-prompts is 357 tokens; with --max-response-length 4 that exceeds the model's"
                        + " context of 256 tokens (use --truncate-prompts left|right to cut it)");
        List<String> cut = new ArrayList<>(args);
        cut.addAll(List.of("--truncate-prompts", "right", "--json"));
        RunnerCli r = RunnerCli.run(ONE_THREAD, cut.toArray(String[]::new));
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.err().contains("note: cut 1 of 2 prompts of bad-test-prompts"), r.err());
    }

    private static JsonNode json(RunnerCli r) throws IOException {
        assertEquals(0, r.exit(), r.err());
        return Json.mapper().readTree(r.out());
    }

    private static List<Integer> slice(JsonNode ids, int from, int to) {
        List<Integer> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(ids.get(i).asInt());
        }
        return out;
    }
}
