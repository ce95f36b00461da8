package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrainingDataReaderTest {
    @TempDir
    Path temp;

    @Test
    void everyFormatIsReadAndExtraFieldsAreIgnored() throws Exception {
        Path file = temp.resolve("mixed.jsonl");
        Files.writeString(file, String.join("\n",
                "{\"lang\": \"ja\", \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
                        + "{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Hello.\"}, "
                        + "{\"role\": \"user\", \"content\": \"Name?\"}, {\"role\": \"assistant\", \"content\": \"XIR.\"}]}",
                "",
                "{\"prompt\": \"2+2?\", \"completion\": \"4\", \"source\": \"maths\"}",
                "{\"instruction\": \"Translate\", \"input\": \"chat\", \"output\": \"cat\"}",
                "{\"instruction\": \"Say hi\", \"input\": \"\", \"output\": \"hi\"}",
                "{\"text\": \"Once upon a time\", \"id\": 7}"));
        List<TrainingRow> rows = TrainingDataReader.read(file);
        assertEquals(5, rows.size(), "the blank line is skipped");
        Conversation chat = assertInstanceOf(Conversation.class, rows.get(0));
        assertEquals(5, chat.messages().size());
        assertEquals(Map.of("role", "assistant", "content", "XIR."), chat.messages().get(4));
        assertEquals("mixed.jsonl:1", chat.source());
        PromptCompletion pair = assertInstanceOf(PromptCompletion.class, rows.get(1));
        assertEquals(List.of(Conversation.message("user", "2+2?"), Conversation.message("assistant", "4")),
                pair.asConversation().messages());
        assertEquals("2+2?", pair.plainPrompt(), "plain text joins prompt and completion as written");
        assertEquals("mixed.jsonl:3", rows.get(1).source(), "line numbers count blank lines");
        PromptCompletion instruction = assertInstanceOf(PromptCompletion.class, rows.get(2));
        assertEquals(List.of(Conversation.message("user", "Translate\n\nchat"), Conversation.message("assistant", "cat")),
                instruction.asConversation().messages());
        assertEquals("Translate\n\nchat\n\n", instruction.plainPrompt(), "a blank line before the output in plain text");
        assertEquals("Say hi", ((PromptCompletion) rows.get(3)).prompt(), "empty input adds nothing");
        assertEquals("Once upon a time", assertInstanceOf(PlainText.class, rows.get(4)).text());
    }

    @Test
    void malformedRowsNameFileAndLine() throws Exception {
        assertError("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", "bad.jsonl:2: no assistant message");
        assertError("{\"messages\": [{\"role\": \"bot\", \"content\": \"hi\"}]}", "bad.jsonl:2: messages[0]: \"role\" must be");
        assertError("{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", "bad.jsonl:2: messages[0]: \"content\" must be a string");
        assertError("{\"prompt\": \"only a prompt\"}", "bad.jsonl:2: \"completion\" must be a string and is missing");
        assertError("{\"question\": \"q\", \"answer\": \"a\"}", "bad.jsonl:2: a row needs \"messages\"");
        assertError("{\"messages\": [", "bad.jsonl:2: not valid JSON");
        assertError("[1, 2]", "bad.jsonl:2: expected a JSON object");
    }

    private void assertError(String secondLine, String expected) throws Exception {
        Path file = temp.resolve("bad.jsonl");
        Files.writeString(file, "{\"prompt\": \"fine\", \"completion\": \"row\"}\n" + secondLine + "\n");
        UserInputException error = assertThrows(UserInputException.class, () -> TrainingDataReader.read(file));
        assertTrue(error.getMessage().startsWith(expected), error.getMessage());
    }

    @Test
    void missingAndEmptyFilesAreUserErrors() throws Exception {
        assertThrows(UserInputException.class, () -> TrainingDataReader.read(temp.resolve("none.jsonl")));
        Path empty = Files.writeString(temp.resolve("empty.jsonl"), "\n\n");
        assertTrue(assertThrows(UserInputException.class, () -> TrainingDataReader.read(empty)).getMessage()
                .contains("has no rows"));
    }

    @Test
    void aRowLongerThanTheBoundIsRefusedAsItIsRead() throws Exception {
        Path file = temp.resolve("huge.jsonl");
        try (var out = Files.newBufferedWriter(file)) {
            out.write("{\"prompt\": \"2+2?\", \"completion\": \"4\"}\n{\"text\": \"");
            for (int i = 0; i < 9; i++) {
                out.write("y".repeat(1 << 20));
            }
            out.write("\"}\n");
        }
        UserInputException e = assertThrows(UserInputException.class, () -> TrainingDataReader.read(file));
        assertEquals("huge.jsonl:2: the row is longer than 8,388,608 characters, the most a training row may have",
                e.getMessage());
    }
}
