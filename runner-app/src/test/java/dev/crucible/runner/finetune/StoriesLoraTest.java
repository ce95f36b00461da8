package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** LoRA on a real pretrained model (stories260k, no chat template): a few steps on a tiny story corpus. */
class StoriesLoraTest {
    private static final List<String> STORIES = List.of(
            "Once upon a time, there was a little red fox named Pip. Pip loved to jump over the big blue rock.",
            "One day, a small bird sat on the big blue rock. Pip said hello, and the bird sang a happy song.",
            "Pip and the bird became best friends. Every morning they met at the big blue rock to play.",
            "When it rained, Pip and the bird hid under the old green tree and told each other funny stories.",
            "At night, Pip looked at the moon and smiled. He was glad to have a friend like the little bird.",
            "The next day, Pip found a shiny stone near the big blue rock. He gave it to the bird as a gift.",
            "The bird put the shiny stone in her nest. She sang a new song for Pip, the best song of all.",
            "And so Pip and the bird lived happily by the big blue rock, jumping and singing every day.");

    @TempDir
    Path temp;

    /** The stories260k fixture (a Llama base model whose tokenizer has no chat template); skips when it is missing. */
    static Path model() {
        Path model = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", "stories260k")
                .normalize();
        Assumptions.assumeTrue(Files.isRegularFile(model.resolve("model.safetensors")), "fixture " + model + " is missing");
        return model;
    }

    @Test
    void loraLowersTheLossOfATinyStoryCorpus() throws Exception {
        Path model = model();
        List<String> lines = new ArrayList<>();
        JsonMapper json = JsonMapper.builder().build();
        for (String story : STORIES) {
            lines.add(json.writeValueAsString(Map.of("text", story)));
        }
        Path data = Files.write(temp.resolve("stories.jsonl"), lines);
        Path out = temp.resolve("adapter");
        // One micro-batch holds the whole corpus, so each step's loss is the corpus loss at that point.
        Cli run = Cli.run("finetune", "--model", model.toString(), "--data", data.toString(), "--out", out.toString(),
                "--device", "cpu", "--method", "lora", "--rank", "8", "--alpha", "16", "--epochs", "12",
                "--micro-batch", "8", "--grad-accum", "1", "--lr", "1e-2", "--warmup-ratio", "0");
        assertEquals(0, run.exit(), run.all());
        JsonNode meta = json.readTree(out.resolve("finetune_meta.json").toFile());
        JsonNode history = meta.get("loss_history");
        assertEquals(12, history.size());
        double first = history.get(0).get("loss").asDouble();
        double last = history.get(11).get("loss").asDouble();
        assertTrue(first > 1.0, "the stories are new to the model: " + first);
        assertTrue(last < 0.8 * first, "loss " + first + " -> " + last);
        assertEquals(List.of("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
                json.convertValue(meta.get("target_modules"), List.class));
    }

    @Test
    void promptCompletionRowsTrainAsPlainTextWithTheLossOnTheCompletion() throws Exception {
        Path model = model();
        List<String> lines = new ArrayList<>();
        JsonMapper json = JsonMapper.builder().build();
        for (String story : STORIES) {
            int cut = story.indexOf(' ', story.length() / 2);
            lines.add(json.writeValueAsString(Map.of("prompt", story.substring(0, cut), "completion", story.substring(cut))));
        }
        Path data = Files.write(temp.resolve("pairs.jsonl"), lines);
        Path out = temp.resolve("pairs");
        Cli run = Cli.run("finetune", "--model", model.toString(), "--data", data.toString(), "--out", out.toString(),
                "--device", "cpu", "--method", "lora", "--rank", "8", "--alpha", "16", "--epochs", "12",
                "--micro-batch", "8", "--grad-accum", "1", "--lr", "1e-2", "--warmup-ratio", "0");
        assertEquals(0, run.exit(), run.all());
        assertEquals("rendering: prompt + completion + </s> as plain text (the model has no chat template; TRL's "
                + "convention), loss on the completion + </s>", run.out().lines().findFirst().orElseThrow());
        JsonNode meta = json.readTree(out.resolve("finetune_meta.json").toFile());
        JsonNode counts = meta.get("data");
        long tokens = counts.get("tokens").asLong();
        long learned = counts.get("assistant_tokens").asLong();
        assertTrue(learned > 8 && learned < tokens / 2 + 8, learned + " of " + tokens + ": about half of each story and its </s>");
        JsonNode history = meta.get("loss_history");
        double first = history.get(0).get("loss").asDouble();
        double last = history.get(11).get("loss").asDouble();
        assertTrue(last < 0.8 * first, "loss " + first + " -> " + last);
    }

    @Test
    void messagesRowsOnABaseModelAreOneLineAndExitTwo() throws Exception {
        Path data = Files.writeString(temp.resolve("chat.jsonl"), "{\"messages\": [{\"role\": \"user\", \"content\": "
                + "\"Hi\"}, {\"role\": \"assistant\", \"content\": \"Hello\"}]}\n");
        Cli run = Cli.run("finetune", "--model", model().toString(), "--data", data.toString(), "--out",
                temp.resolve("never").toString(), "--device", "cpu");
        assertEquals(2, run.exit(), run.all());
        assertTrue(run.err().strip().startsWith("error: chat.jsonl:1: \"messages\" rows are rendered with the model's "
                + "chat template, and the model has none"), run.err());
        assertEquals(1, run.err().strip().lines().count(), run.err());
        assertTrue(run.out().isEmpty(), "refused before any work: " + run.out());
    }
}
