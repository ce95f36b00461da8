package dev.crucible.runner.export;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.model.Architecture;
import dev.crucible.api.tensor.DType;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.huggingface.hub.ModelSpec;
import dev.crucible.runner.model.ModelInitializer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelCardTest {
    @TempDir
    Path temp;

    @Test
    void aHubBaseIsNamedByRepositoryRevisionAndCommitWithItsLicence() throws IOException {
        String commit = "0123456789abcdef0123456789abcdef01234567";
        Path snapshot = temp.resolve("hub/models--org--tiny/snapshots/" + commit);
        ModelInitializer.write(new ModelInitializer.Spec(Architecture.LLAMA, 16, 1, 2, 2, 8, 32, 400, true, DType.F32, 1,
                64, 10000, 0.02), snapshot, false);
        Files.writeString(snapshot.resolve("README.md"), "---\nlicense: other\nlicense_name: tiny-license\n"
                + "license_link: LICENSE\ntags:\n- a\n---\n# Tiny\n");
        Files.writeString(snapshot.resolve("LICENSE.txt"), "terms");
        Files.writeString(snapshot.resolve("USE_POLICY.md"), "policy");
        Files.writeString(snapshot.resolve("eval_results.json"), "{}");
        BaseFiles files = BaseFiles.of(snapshot);
        assertEquals(List.of("README.md", "eval_results.json"), files.dropped());
        Path out = Files.createDirectories(temp.resolve("out"));
        Files.writeString(out.resolve("config.json"), "{}");
        ModelCard card = new ModelCard(new ModelLocator.Located(snapshot, Optional.of(new ModelSpec("org/tiny", "main"))),
                "A summary.", "A method.", Map.of("alpha", "1"), List.of(new ModelCard.Score("Refusals", "9/10", "1/10")),
                ModelCard.commandLine("runner", List.of("merge", "--model", "org/tiny", "--prompt", "it's [x]")), "", List.of("x"));
        String text = card.render(out, "out", files);
        assertTrue(text.startsWith("---\nbase_model: org/tiny\nlicense: other\nlicense_name: tiny-license\nlicense_link: LICENSE\n"
                + "library_name: transformers\ntags:\n- crucible\n- x\n---\n\n# out\n\nA summary.\n"), text);
        assertTrue(text.contains("[`org/tiny`](https://huggingface.co/org/tiny) at revision `main` (commit `" + commit + "`)."), text);
        assertTrue(text.contains("(`other`); `LICENSE.txt`, `USE_POLICY.md` are copied from the base."), text);
        assertTrue(text.contains("| Refusals | 9/10 | 1/10 |"), text);
        assertTrue(text.contains("runner merge --model org/tiny --prompt 'it'\\''s [x]'"), text);
        assertTrue(text.contains("| `config.json` | `44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a` |"), text);
    }
}
