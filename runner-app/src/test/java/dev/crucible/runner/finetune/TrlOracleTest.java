package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.runner.OracleVenv;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.runner.text.ModelTokenizer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Rows on a base model without a chat template (stories260k) give the very ids and labels TRL's SFTTrainer
 * trains on: prompt/completion rows with the loss on the completion (TRL's default for them) and on everything
 * ({@code completion_only_loss=False}, our {@code --loss-on all}), and text rows. Skipped, with the reason, where
 * the TRL venv cannot be made.
 */
class TrlOracleTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final List<Map<String, String>> PAIRS = List.of(
            Map.of("prompt", "Pip loved to", "completion", " jump over the big blue rock."),
            Map.of("prompt", "Once upon a ti", "completion", "me, a bird sang."),
            Map.of("prompt", "The sky is", "completion", " blue.</s>"),
            Map.of("prompt", "Tom said:\n", "completion", "\"Let us play!\" and they ran to the park."));
    private static final List<Map<String, String>> TEXTS = List.of(
            Map.of("text", "Once upon a time, there was a little red fox named Pip."),
            Map.of("text", "The bird sang.</s>"));

    @TempDir
    Path temp;

    @Test
    void idsAndLabelsMatchTrlsSftTrainer() throws Exception {
        Path model = StoriesLoraTest.model();
        Path python = OracleVenv.python();
        Map<String, Object> cases = new LinkedHashMap<>();
        cases.put("pairs", Map.of("rows", PAIRS, "completion_only_loss", "default"));
        cases.put("pairs_all", Map.of("rows", PAIRS, "completion_only_loss", false));
        cases.put("text", Map.of("rows", TEXTS, "completion_only_loss", "default"));
        Path casesFile = temp.resolve("cases.json");
        // null (TRL's default: completion-only for prompt/completion rows) cannot sit in Map.of.
        Files.writeString(casesFile, JSON.writeValueAsString(cases).replace("\"default\"", "null"));
        JsonNode trl = runOracle(python, model, casesFile);

        try (ModelTokenizer tokenizer = ModelTokenizer.load(model)) {
            ChatFormat format = ChatFormat.of(tokenizer);
            assertSame(trl.get("pairs"), new ExampleEncoder(format, 1024, ExampleEncoder.Overlong.TRUNCATE,
                    ExampleEncoder.LossOn.ASSISTANT).encodeAll(rows(PAIRS)), "prompt/completion, loss on the completion");
            assertSame(trl.get("pairs_all"), new ExampleEncoder(format, 1024, ExampleEncoder.Overlong.TRUNCATE,
                    ExampleEncoder.LossOn.ALL).encodeAll(rows(PAIRS)), "prompt/completion, --loss-on all");
            assertSame(trl.get("text"), new ExampleEncoder(format, 1024, ExampleEncoder.Overlong.TRUNCATE,
                    ExampleEncoder.LossOn.ASSISTANT).encodeAll(rows(TEXTS)), "text rows");
        }
    }

    private static List<TrainingRow> rows(List<Map<String, String>> rows) throws Exception {
        List<TrainingRow> parsed = new ArrayList<>();
        for (Map<String, String> row : rows) {
            parsed.add(TrainingDataReader.parse(JSON.writeValueAsString(row), "oracle:" + (parsed.size() + 1)));
        }
        return parsed;
    }

    private static void assertSame(JsonNode expected, ExampleEncoder.Result ours, String what) {
        assertEquals(expected.size(), ours.examples().size(), what);
        for (int i = 0; i < expected.size(); i++) {
            EncodedExample example = ours.examples().get(i);
            assertEquals(expected.get(i).get("input_ids").toString(), Arrays.toString(example.ids()).replace(" ", ""),
                    what + ", row " + (i + 1) + ": input_ids");
            assertEquals(expected.get(i).get("labels").toString(), Arrays.toString(example.labels()).replace(" ", ""),
                    what + ", row " + (i + 1) + ": labels");
        }
    }

    private JsonNode runOracle(Path python, Path model, Path casesFile) throws Exception {
        Path script = Path.of(getClass().getResource("/oracles/trl_sft_tokenize.py").toURI());
        Path output = temp.resolve("trl.json");
        Path log = temp.resolve("trl.log");
        ProcessBuilder builder = new ProcessBuilder(python.toString(), script.toString(), model.toString(),
                casesFile.toString()).redirectOutput(output.toFile()).redirectError(log.toFile());
        builder.environment().put("HF_HUB_OFFLINE", "1");
        builder.environment().put("HF_HOME", temp.resolve("hf").toString());
        Process process = builder.start();
        boolean done = process.waitFor(5, TimeUnit.MINUTES);
        if (!done) {
            process.destroyForcibly();
        }
        List<String> errors = Files.readAllLines(log, StandardCharsets.UTF_8);
        Assumptions.assumeTrue(done && process.exitValue() == 0, "the TRL oracle failed: "
                + (errors.isEmpty() ? "no output" : errors.getLast()));
        return JSON.readTree(output.toFile());
    }
}
