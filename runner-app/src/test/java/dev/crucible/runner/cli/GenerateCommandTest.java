package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code runner generate} end to end on the real stories260k model, against the llama2.c goldens. */
class GenerateCommandTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    static Path stories() {
        Path p = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", "stories260k").normalize();
        Assumptions.assumeTrue(Files.isDirectory(p), "fixture " + p + " is missing (../shared beside the repository)");
        return p;
    }

    private static JsonNode golden(String name) throws Exception {
        for (JsonNode c : Json.mapper().readTree(stories().resolve("goldens.json").toFile()).get("cases")) {
            if (c.get("name").asText().equals(name)) {
                return c;
            }
        }
        throw new AssertionError("no golden " + name);
    }

    private static List<Integer> ints(JsonNode array, int limit) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < Math.min(limit, array.size()); i++) {
            out.add(array.get(i).asInt());
        }
        return out;
    }

    @Test
    void printsTheGoldenIdsForOnceUponATime() throws Exception {
        RunnerCli r = RunnerCli.run(ONE_THREAD, "generate", "--model", stories().toString(), "--prompt", "Once upon a time",
                "--max-new-tokens", "64", "--json", "--device", "cpu");
        assertEquals(0, r.exit(), r.err());
        JsonNode result = Json.mapper().readTree(r.out());
        JsonNode golden = golden("once_upon_a_time");
        assertEquals(ints(golden.get("prompt_ids"), 99), ints(result.get("prompt_ids"), 99));
        assertEquals(ints(golden.get("generated_ids"), 64), ints(result.get("generated_ids"), 99));
        assertTrue(golden.get("generated_text").asText().startsWith(result.get("text").asText().substring(0, 40)), result.get("text").asText());
    }

    @Test
    void aBatchEqualsOneAtATime(@TempDir Path temp) throws Exception {
        List<String> names = List.of("once_upon_a_time", "lily_and_tom", "little_dog");
        List<String> prompts = new ArrayList<>();
        for (String name : names) {
            prompts.add(golden(name).get("prompt").asText());
        }
        Path file = temp.resolve("prompts.txt");
        Files.write(file, prompts);
        RunnerCli r = RunnerCli.run(ONE_THREAD, "generate", "--model", stories().toString(), "--prompts", file.toString(),
                "--max-new-tokens", "24", "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode array = Json.mapper().readTree(r.out());
        assertEquals(3, array.size());
        for (int i = 0; i < names.size(); i++) {
            assertEquals(prompts.get(i), array.get(i).get("prompt").asText());
            assertEquals(ints(golden(names.get(i)).get("generated_ids"), 24), ints(array.get(i).get("generated_ids"), 99), names.get(i));
        }
    }

    @Test
    void badInputIsOneLineAndExitTwo(@TempDir Path temp) throws Exception {
        RunnerCli missing = RunnerCli.run("generate", "--model", temp.resolve("nope").toString(), "--prompt", "x");
        assertEquals(2, missing.exit());
        assertEquals(1, missing.err().strip().lines().count(), missing.err());
        RunnerCli system = RunnerCli.run("generate", "--model", stories().toString(), "--prompt", "x", "--system", "s");
        assertEquals(2, system.exit());
        assertTrue(system.err().contains("--system needs --chat"));
        RunnerCli noPrompt = RunnerCli.run("generate", "--model", stories().toString());
        assertEquals(2, noPrompt.exit());
        RunnerCli pickle = RunnerCli.run("generate", "--model", pickleFolder(temp).toString(), "--prompt", "x");
        assertEquals(2, pickle.exit(), pickle.err());
        assertTrue(pickle.err().toLowerCase().contains("pickle"), pickle.err());
        assertFalse(pickle.err().contains("Exception"), pickle.err());
        RunnerCli chat = RunnerCli.run("generate", "--model", stories().toString(), "--prompt", "x", "--chat");
        assertEquals(2, chat.exit());
        assertTrue(chat.err().contains("no chat template"), chat.err());
    }

    private static Path pickleFolder(Path temp) throws Exception {
        Path dir = Files.createDirectories(temp.resolve("pickled"));
        Files.copy(stories().resolve("config.json"), dir.resolve("config.json"));
        Files.copy(stories().resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
        Files.writeString(dir.resolve("pytorch_model.bin"), "not really a pickle");
        return dir;
    }
}
