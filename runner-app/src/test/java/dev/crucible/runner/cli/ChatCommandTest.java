package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.runner.Main;
import dev.crucible.runner.RunnerEnvironment;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code runner chat} driven through a fake standard input on a tiny random model with a ChatML template. Its
 * weights are drawn wide ({@code --init-std 0.3}) so that what it says depends on what it was asked.
 */
class ChatCommandTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    @TempDir
    static Path temp;

    @Test
    void repliesStreamTokenByTokenAndResetForgetsTheConversation() throws Exception {
        Path model = BenchDecodeCommandTest.tinyModel(temp, "chat-tiny", "--init-std", "0.3");
        Chunks out = new Chunks();
        StringWriter err = new StringWriter();
        int exit = withStdin("hello\nhow are you\n/reset\nhello\n", () -> Main.run(
                new String[] {"chat", "--model", model.toString(), "--max-new-tokens", "8", "--device", "cpu"},
                new RunnerEnvironment(ONE_THREAD, Optional.empty()), new PrintWriter(out, true), new PrintWriter(err, true)));
        assertEquals(0, exit, err.toString());

        // Each reply ends with a line break; stdout carries nothing else (the prompt and messages go to stderr).
        String fresh = generate(model, "hello");
        assertFalse(fresh.isEmpty(), "this seed's model says something");
        String all = out.text();
        assertTrue(all.startsWith(fresh + "\n"), "the first turn is the chat-rendered prompt, decoded greedily: " + all);
        assertTrue(all.endsWith("\n" + fresh + "\n"), "after /reset the same question gets the same answer: " + all);
        assertTrue(all.length() > 2 * (fresh.length() + 1), "a second reply came between them: " + all);

        // Streamed: the first reply arrived in several writes, in order, each a continuation of the text before.
        List<String> firstReplyWrites = new ArrayList<>();
        StringBuilder sofar = new StringBuilder();
        for (String chunk : out.chunks) {
            if (sofar.length() >= fresh.length()) {
                break;
            }
            firstReplyWrites.add(chunk);
            sofar.append(chunk);
        }
        assertEquals(fresh, sofar.toString());
        assertTrue(firstReplyWrites.size() > 1, "written as the tokens came: " + firstReplyWrites);
        assertTrue(err.toString().contains("(history cleared)"), err.toString());
    }

    @Test
    void theSecondTurnSeesTheFirst() throws Exception {
        Path model = BenchDecodeCommandTest.tinyModel(temp, "chat-history", "--init-std", "0.3");
        Chunks withHistory = new Chunks();
        int exit = withStdin("hello\nhello\n/exit\nnever read\n", () -> Main.run(
                new String[] {"chat", "--model", model.toString(), "--max-new-tokens", "6"},
                new RunnerEnvironment(ONE_THREAD, Optional.empty()), new PrintWriter(withHistory, true),
                new PrintWriter(new StringWriter(), true)));
        assertEquals(0, exit);
        String first = generate(model, "hello", 6);
        String all = withHistory.text();
        assertTrue(all.startsWith(first + "\n"), all);
        String second = all.substring(first.length() + 1);
        assertTrue(second.endsWith("\n"), "/exit stops reading: " + all);
        assertNotEquals(first + "\n", second, "the second 'hello' is asked after a whole exchange");
    }

    @Test
    void aModelWithoutChatTemplateIsAOneLineError() {
        Path stories = GenerateCommandTest.stories();
        RunnerCli r = RunnerCli.run(ONE_THREAD, "chat", "--model", stories.toString());
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("no chat template"), r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
    }

    private static String generate(Path model, String prompt) throws Exception {
        return generate(model, prompt, 8);
    }

    private static String generate(Path model, String prompt, int maxNewTokens) throws Exception {
        RunnerCli r = RunnerCli.run(ONE_THREAD, "generate", "--model", model.toString(), "--chat", "--prompt", prompt,
                "--max-new-tokens", Integer.toString(maxNewTokens), "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode json = Json.mapper().readTree(r.out());
        return json.get("text").asText();
    }

    static int withStdin(String input, java.util.function.IntSupplier body) {
        InputStream original = System.in;
        System.setIn(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)));
        try {
            return body.getAsInt();
        } finally {
            System.setIn(original);
        }
    }

    /** Keeps every write separately, in order. */
    private static final class Chunks extends Writer {
        final List<String> chunks = new ArrayList<>();

        @Override
        public void write(char[] buffer, int offset, int length) {
            chunks.add(new String(buffer, offset, length));
        }

        String text() {
            return String.join("", chunks);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }
}
