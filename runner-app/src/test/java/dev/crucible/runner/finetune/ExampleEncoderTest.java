package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.TrainingBatch;
import dev.crucible.runner.model.CharTokenizerFiles;
import dev.crucible.runner.text.ModelTokenizer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Tokens and labels with the init-model character tokenizer (each printable character is one token). */
class ExampleEncoderTest {
    @TempDir
    static Path temp;
    private static ModelTokenizer tokenizer;

    @BeforeAll
    static void load() {
        tokenizer = ModelTokenizer.load(TinyModel.write(temp.resolve("model"), DType.F32));
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    private static final Conversation CHAT = new Conversation(List.of(
            Conversation.message("system", "Be kind."),
            Conversation.message("user", "Hi"),
            Conversation.message("assistant", "Hello!"),
            Conversation.message("user", "Bye"),
            Conversation.message("assistant", "Ciao.")), "t:1");

    @Test
    void onlyTheAssistantsTokensAndTurnEndsAreLabelled() {
        ExampleEncoder encoder = new ExampleEncoder(ChatFormat.of(tokenizer), 1024, ExampleEncoder.Overlong.TRUNCATE);
        ExampleEncoder.Result result = encoder.encodeAll(List.of(CHAT));
        EncodedExample example = result.examples().getFirst();
        assertArrayEquals(tokenizer.encodeWithoutSpecialTokens(tokenizer.renderChat(CHAT.messages(), false)),
                example.ids(), "ids are the rendered conversation's, tokenized once");
        StringBuilder learned = new StringBuilder();
        int[] labels = example.labels();
        int[] ids = example.ids();
        for (int i = 0; i < ids.length; i++) {
            if (labels[i] != TrainingBatch.IGNORE) {
                assertEquals(ids[i], labels[i]);
                learned.append(tokenizer.decode(new int[] {ids[i]})).append('|');
            }
        }
        assertEquals("H|e|l|l|o|!||C|i|a|o|.||", learned.toString(),
                "the replies, each with its <|im_end|> (decoded as nothing), and no system or user text");
        int imEnd = CharTokenizerFiles.idOf(CharTokenizerFiles.IM_END);
        int endMarkers = (int) Arrays.stream(labels).filter(id -> id == imEnd).count();
        assertEquals(2, endMarkers, "each turn's <|im_end|> is learned, so the model learns to stop");
        assertEquals(13, example.labelledTokens());
        assertEquals(0, result.tokenizedPiecewise());
    }

    @Test
    void overlongRowsAreTruncatedOrDroppedAndCounted() {
        Conversation longReply = new Conversation(List.of(Conversation.message("user", "Count"),
                Conversation.message("assistant", "one two three four five six seven eight nine ten")), "t:2");
        Conversation noRoomToLearn = new Conversation(List.of(Conversation.message("user", "x".repeat(80)),
                Conversation.message("assistant", "y")), "t:3");
        Conversation shortRow = new Conversation(List.of(Conversation.message("user", "a"),
                Conversation.message("assistant", "b")), "t:4");
        List<Conversation> rows = List.of(longReply, noRoomToLearn, shortRow);
        ExampleEncoder.Result truncated = new ExampleEncoder(ChatFormat.of(tokenizer), 40,
                ExampleEncoder.Overlong.TRUNCATE).encodeAll(rows);
        assertEquals(1, truncated.truncated());
        assertEquals(1, truncated.dropped(), "truncation would leave nothing to learn");
        assertEquals(2, truncated.examples().size());
        assertEquals(40, truncated.examples().getFirst().length());
        ExampleEncoder.Result dropped = new ExampleEncoder(ChatFormat.of(tokenizer), 40,
                ExampleEncoder.Overlong.DROP).encodeAll(rows);
        assertEquals(0, dropped.truncated());
        assertEquals(2, dropped.dropped());
        assertEquals(1, dropped.examples().size());
        assertTrue(assertThrows(UserInputException.class, () -> new ExampleEncoder(ChatFormat.of(tokenizer), 10,
                ExampleEncoder.Overlong.DROP).encodeAll(List.of(longReply))).getMessage().contains("every row was dropped"));
    }

    @Test
    void promptCompletionRowsOnAChatModelAreRenderedWithItsTemplate() {
        ExampleEncoder.Result result = new ExampleEncoder(ChatFormat.of(tokenizer), 1024,
                ExampleEncoder.Overlong.TRUNCATE).encodeAll(List.of(new PromptCompletion("Hi", "Hello!", "", "t:6")));
        EncodedExample example = result.examples().getFirst();
        assertArrayEquals(tokenizer.encodeWithoutSpecialTokens(tokenizer.renderChat(List.of(
                Conversation.message("user", "Hi"), Conversation.message("assistant", "Hello!")), false)), example.ids());
        assertEquals(7, example.labelledTokens(), "Hello! and its <|im_end|>");
        assertEquals("the model's chat template, loss on the assistant's tokens", result.rendering());
    }

    @Test
    void lossOnAllLearnsTheWholeConversation() {
        ExampleEncoder.Result result = new ExampleEncoder(ChatFormat.of(tokenizer), 1024,
                ExampleEncoder.Overlong.TRUNCATE, ExampleEncoder.LossOn.ALL).encodeAll(List.of(CHAT));
        EncodedExample example = result.examples().getFirst();
        assertArrayEquals(tokenizer.encodeWithoutSpecialTokens(tokenizer.renderChat(CHAT.messages(), false)),
                example.ids());
        assertArrayEquals(example.ids(), example.labels(), "system and user turns are learned too");
    }

    @Test
    void plainTextIsLearnedWholeWithItsEos() {
        ExampleEncoder.Result result = new ExampleEncoder(ChatFormat.of(tokenizer), 1024,
                ExampleEncoder.Overlong.TRUNCATE).encodeAll(List.of(new PlainText("abc", "t:5")));
        EncodedExample example = result.examples().getFirst();
        assertArrayEquals(tokenizer.encode("abc" + CharTokenizerFiles.IM_END), example.ids(),
                "the tokenizer's eos_token ends the text, as in TRL");
        assertArrayEquals(example.ids(), example.labels());
        assertEquals("text + <|im_end|> as plain text, loss on every token", result.rendering());
    }

    /** A tokenizer that merges across the span boundary: the row is tokenized piece by piece, spans stay exact. */
    @Test
    void aTokenStraddlingASpanBoundaryFallsBackToPieces() {
        ChatFormat merging = new ChatFormat() {
            @Override
            public String render(List<java.util.Map<String, String>> messages, boolean addGenerationPrompt) {
                StringBuilder text = new StringBuilder();
                for (var message : messages) {
                    text.append(message.get("role").equals("user") ? "Q:" : "").append(message.get("content"))
                            .append(message.get("role").equals("user") ? "" : ";");
                }
                return text.toString();
            }

            /** One token per character, except "?A" which is one token. */
            @Override
            public int[] encode(String text) {
                return text.replace("?A", "\u0001").chars().toArray();
            }

            @Override
            public int[] encodePlain(String text) {
                return encode(text);
            }

            @Override
            public boolean hasTemplate() {
                return true;
            }

            @Override
            public java.util.Optional<String> eosToken() {
                return java.util.Optional.empty();
            }
        };
        Conversation row = new Conversation(List.of(Conversation.message("user", "Why?"),
                Conversation.message("assistant", "Am")), "t:6");
        ExampleEncoder.Result result = new ExampleEncoder(merging, 100, ExampleEncoder.Overlong.TRUNCATE)
                .encodeAll(List.of(row));
        assertEquals(1, result.tokenizedPiecewise());
        EncodedExample example = result.examples().getFirst();
        assertArrayEquals("Q:Why?Am;".chars().toArray(), example.ids());
        int ignore = TrainingBatch.IGNORE;
        assertArrayEquals(new int[] {ignore, ignore, ignore, ignore, ignore, ignore, 'A', 'm', ';'}, example.labels());
    }
}
