package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.train.TrainingBatch;
import dev.crucible.runner.text.ModelTokenizer;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Rows on a base model without a chat template (stories260k's Llama tokenizer): prompt/completion rows become
 * plain text as TRL's SFTTrainer makes them (TrlOracleTest compares the ids with TRL itself).
 */
class PlainRenderingTest {
    private static ModelTokenizer tokenizer;
    private static int eos;

    @BeforeAll
    static void load() {
        tokenizer = ModelTokenizer.load(StoriesLoraTest.model());
        eos = tokenizer.eosIds().iterator().next();
    }

    @AfterAll
    static void close() {
        if (tokenizer != null) {
            tokenizer.close();
        }
    }

    private static ExampleEncoder encoder(ExampleEncoder.LossOn lossOn) {
        return new ExampleEncoder(ChatFormat.of(tokenizer), 1024, ExampleEncoder.Overlong.TRUNCATE, lossOn);
    }

    @Test
    void promptAndCompletionAreConcatenatedWithEosAndOnlyTheCompletionIsLearned() {
        PromptCompletion row = new PromptCompletion("Pip loved to", " jump over the rock.", "", "d:1");
        ExampleEncoder.Result result = encoder(ExampleEncoder.LossOn.ASSISTANT).encodeAll(List.of(row));
        EncodedExample example = result.examples().getFirst();
        int[] ids = example.ids();
        assertArrayEquals(tokenizer.encode("Pip loved to jump over the rock.</s>"), ids,
                "one tokenization of prompt + completion + EOS, with the tokenizer's BOS");
        assertEquals(tokenizer.bosId().orElseThrow(), ids[0]);
        assertEquals(eos, ids[ids.length - 1], "the EOS token, so the model learns to stop");
        int promptLength = tokenizer.encode("Pip loved to").length;
        int[] labels = example.labels();
        for (int i = 0; i < ids.length; i++) {
            assertEquals(i < promptLength ? TrainingBatch.IGNORE : ids[i], labels[i], "position " + i);
        }
        assertEquals(ids.length - promptLength, example.labelledTokens());
        assertEquals(0, result.promptsMerged());
        assertEquals("prompt + completion + </s> as plain text (the model has no chat template; TRL's convention), "
                + "loss on the completion + </s>", result.rendering());
    }

    @Test
    void aCompletionEndingWithEosGetsNoSecondOne() {
        EncodedExample example = encoder(ExampleEncoder.LossOn.ASSISTANT).encodeAll(List.of(
                new PromptCompletion("The sky is", " blue.</s>", "", "d:1"))).examples().getFirst();
        int[] ids = example.ids();
        assertEquals(eos, ids[ids.length - 1]);
        assertTrue(ids[ids.length - 2] != eos, Arrays.toString(ids));
    }

    @Test
    void lossOnAllLearnsThePromptToo() {
        ExampleEncoder.Result result = encoder(ExampleEncoder.LossOn.ALL).encodeAll(List.of(
                new PromptCompletion("Pip loved to", " jump.", "", "d:1")));
        EncodedExample example = result.examples().getFirst();
        assertArrayEquals(tokenizer.encode("Pip loved to jump.</s>"), example.ids());
        assertArrayEquals(example.ids(), example.labels());
        assertTrue(result.rendering().endsWith("loss on every token"), result.rendering());
    }

    @Test
    void instructionRowsAreSeparatedByBlankLines() {
        PromptCompletion row = (PromptCompletion) TrainingDataReader.parse(
                "{\"instruction\": \"Name the fox\", \"input\": \"a red fox\", \"output\": \"Pip\"}", "d:1");
        ExampleEncoder.Result result = encoder(ExampleEncoder.LossOn.ASSISTANT).encodeAll(List.of(row));
        EncodedExample example = result.examples().getFirst();
        assertArrayEquals(tokenizer.encode("Name the fox\n\na red fox\n\nPip</s>"), example.ids());
        assertTrue(result.rendering().endsWith(", instruction rows as instruction, input and output separated by blank "
                + "lines"), result.rendering());
        int promptLength = tokenizer.encode("Name the fox\n\na red fox\n\n").length;
        assertEquals(example.ids().length - promptLength, example.labelledTokens(), "Pip and </s>");
    }

    @Test
    void aPromptMergingIntoItsCompletionIsSplitAtThePromptsLengthAndCounted() {
        ExampleEncoder.Result result = encoder(ExampleEncoder.LossOn.ASSISTANT).encodeAll(List.of(
                new PromptCompletion("Once upon a ti", "me.", "", "d:1")));
        EncodedExample example = result.examples().getFirst();
        int promptLength = tokenizer.encode("Once upon a ti").length;
        assertArrayEquals(tokenizer.encode("Once upon a time.</s>"), example.ids());
        assertEquals(example.ids().length - promptLength, example.labelledTokens());
        assertEquals(1, result.promptsMerged());
    }

    @Test
    void messagesRowsAreRefusedNamingTheRow() {
        Conversation chat = new Conversation(List.of(Conversation.message("user", "Hi"),
                Conversation.message("assistant", "Hello")), "chat.jsonl:3");
        UserInputException error = assertThrows(UserInputException.class,
                () -> encoder(ExampleEncoder.LossOn.ASSISTANT).encodeAll(List.of(
                        new PromptCompletion("a", "b", "", "chat.jsonl:1"), chat)));
        assertEquals("chat.jsonl:3: \"messages\" rows are rendered with the model's chat template, and the model has "
                + "none (no chat_template in tokenizer_config.json, no chat_template.jinja); for a base model write "
                + "{\"prompt\", \"completion\"} rows (trained as plain text, loss on the completion) or {\"text\"} "
                + "rows, or add a chat template", error.getMessage());
    }

    @Test
    void heldOutRowsAreAnsweredFromThePlainPrompt() {
        RefusalEvaluation.Probe probe = encoder(ExampleEncoder.LossOn.ASSISTANT)
                .probe(new PromptCompletion("Pip loved to", " jump.", "", "d:1")).orElseThrow();
        assertArrayEquals(tokenizer.encode("Pip loved to"), probe.prompt());
        assertEquals(" jump.", probe.reference());
    }
}
