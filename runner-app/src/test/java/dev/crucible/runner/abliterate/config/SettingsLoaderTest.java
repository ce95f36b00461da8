package dev.crucible.runner.abliterate.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.dataformat.toml.TomlMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.runner.evaluation.ScorerSpec;
import dev.crucible.runner.evaluation.Scorers;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.study.OnExisting;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SettingsLoaderTest {

    @TempDir
    Path dir;

    private AbliterationSettings load(Map<String, String> env, Map<String, Object> cli) {
        return SettingsLoader.load(Optional.empty(), env, cli, dir, () -> 777);
    }

    private AbliterationSettings loadToml(String toml) throws IOException {
        Files.writeString(dir.resolve("config.toml"), toml);
        return load(Map.of(), Map.of());
    }

    private String tomlError(String toml) throws IOException {
        Files.writeString(dir.resolve("config.toml"), toml);
        return assertThrows(UserInputException.class, () -> load(Map.of(), Map.of())).getMessage();
    }

    @Test
    void defaultsAreTheMethodsNumbers() {
        AbliterationSettings s = load(Map.of(), Map.of());
        assertEquals(Optional.empty(), s.model(), "the demo model");
        assertEquals(200, s.nTrials());
        assertEquals(60, s.nStartupTrials());
        assertEquals(128, s.nCandidates());
        assertEquals(100, s.maxResponseLength());
        assertEquals(0, s.batchSize());
        assertEquals(RowNormalization.FULL, s.rowNormalization());
        assertEquals(1.0, s.winsorizationQuantile());
        assertTrue(s.orthogonalize());
        assertEquals(List.of(DirectionScope.GLOBAL, DirectionScope.PER_LAYER), s.directionScopes());
        assertEquals(0.5, s.maxKl());
        assertEquals(5_000_000_000L, s.maxShardSize());
        assertEquals("You are a helpful assistant.", s.systemPrompt());
        assertEquals(Optional.empty(), s.responsePrefix(), "auto-detected");
        assertEquals("bundled:harmless/train[:400]", s.goodPrompts().compact());
        assertEquals("bundled:harmful/train[:400]", s.badPrompts().compact());
        assertEquals("bundled:harmless/test[:100]", s.goodTestPrompts().compact());
        assertEquals("bundled:harmful/test[:100]", s.badTestPrompts().compact());
        assertEquals(List.of("refusals", "kl_divergence"), s.scorers().stream().map(ScorerSpec::plugin).toList());
        assertEquals(Optional.empty(), s.configFile());
        assertFalse(s.headless());
    }

    @Test
    void aMissingSeedIsDrawnAndRecorded() {
        AbliterationSettings drawn = load(Map.of(), Map.of());
        assertEquals(777, drawn.seed());
        assertTrue(drawn.seedGenerated());
        assertFalse(drawn.isGiven(Setting.N_TRIALS) || drawn.isGiven(Setting.SEED));
        assertTrue(load(Map.of("CRUCIBLE_N_TRIALS", "200"), Map.of()).isGiven(Setting.N_TRIALS), "given, even as the default's value");
        AbliterationSettings given = load(Map.of(), Map.of("seed", 5));
        assertEquals(5, given.seed());
        assertFalse(given.seedGenerated());
        AbliterationSettings real = SettingsLoader.load(Optional.empty(), Map.of(), Map.of(), dir);
        assertTrue(real.seedGenerated() && real.seed() >= 0);
    }

    @Test
    void precedenceIsCliThenEnvironmentThenFileThenDefaults() throws IOException {
        Files.writeString(dir.resolve("config.toml"), """
                n_trials = 50
                seed = 1
                batch_size = 8
                max_kl = 0.3
                """);
        Map<String, String> env = Map.of("CRUCIBLE_N_TRIALS", "60", "CRUCIBLE_SEED", "2");
        AbliterationSettings s = load(env, Map.of("n_trials", 70));
        assertEquals(70, s.nTrials(), "command line over environment");
        assertEquals(2, s.seed(), "environment over file");
        assertEquals(8, s.batchSize(), "file over default");
        assertEquals(0.3, s.maxKl());
        assertEquals(60, s.nStartupTrials(), "default where no layer speaks");
        assertEquals(Optional.of(dir.resolve("config.toml")), s.configFile());
        assertTrue(s.isGiven(Setting.N_TRIALS) && s.isGiven(Setting.BATCH_SIZE) && s.isGiven(Setting.MAX_KL));
        assertFalse(s.isGiven(Setting.N_STARTUP_TRIALS), "a default is not given");

        AbliterationSettings withoutCli = load(env, Map.of());
        assertEquals(60, withoutCli.nTrials(), "an absent flag does not bring the default back");
        Map<String, Object> nullFlag = new HashMap<>();
        nullFlag.put("n_trials", null);
        assertEquals(60, load(env, nullFlag).nTrials(), "a null flag value counts as absent");
    }

    @Test
    void commandLineStringsAreParsedLikeTheEnvironment() {
        AbliterationSettings s = load(Map.of(), Map.of("n_trials", "12", "headless", "true", "row_normalization",
                "pre", "direction_scopes", "per-layer", "max_shard_size", "2GiB", "on_existing", "restart",
                "winsorization_quantile", 0.995, "export_trial", 7, "study_dir", Path.of("studies/x")));
        assertEquals(12, s.nTrials());
        assertTrue(s.headless());
        assertEquals(RowNormalization.PRE, s.rowNormalization());
        assertEquals(List.of(DirectionScope.PER_LAYER), s.directionScopes());
        assertEquals(2L << 30, s.maxShardSize());
        assertEquals(Optional.of(OnExisting.RESTART), s.onExisting());
        assertEquals(0.995, s.winsorizationQuantile());
        assertEquals(OptionalInt.of(7), s.exportTrial());
        assertEquals(Optional.of(dir.resolve("studies/x")), s.studyDir(), "relative to the working directory");
        assertThrows(IllegalArgumentException.class, () -> load(Map.of(), Map.of("n_trails", 1)),
                "the command passes keys it knows");
    }

    @Test
    void configFileSelection() throws IOException {
        Files.writeString(dir.resolve("config.toml"), "n_trials = 11\n");
        Files.createDirectories(dir.resolve("other"));
        Files.writeString(dir.resolve("other/run.toml"), "n_trials = 22\n");
        assertEquals(11, load(Map.of(), Map.of()).nTrials(), "./config.toml when present");
        assertEquals(22, SettingsLoader.load(Optional.of(Path.of("other/run.toml")), Map.of(), Map.of(), dir,
                () -> 0).nTrials(), "--config wins");
        assertEquals(22, load(Map.of("CRUCIBLE_CONFIG", "other/run.toml"), Map.of()).nTrials());
        String missing = assertThrows(UserInputException.class, () -> SettingsLoader.load(
                Optional.of(Path.of("nope.toml")), Map.of(), Map.of(), dir, () -> 0)).getMessage();
        assertTrue(missing.contains("config file nope.toml does not exist"), missing);
    }

    @Test
    void unknownKeysAreErrorsThatSuggestTheClosest() throws IOException {
        String key = tomlError("n_trails = 5\n");
        assertTrue(key.contains("unknown key 'n_trails'") && key.contains("did you mean 'n_trials'?"), key);
        String table = tomlError("[good_prompt]\ndataset = \"x.txt\"\n");
        assertTrue(table.contains("unknown key 'good_prompt'") && table.contains("'good_prompts'"), table);
        String nested = tomlError("[bad_prompts]\ndataset = \"x.txt\"\nsytem_prompt = \"s\"\n");
        assertTrue(nested.contains("'bad_prompts.sytem_prompt'") && nested.contains("'system_prompt'"), nested);
        String scorer = tomlError("[[scorers]]\nplugin = \"refusals\"\noptimisation = \"minimize\"\n");
        assertTrue(scorer.contains("'scorers[1].optimisation'") && scorer.contains("'optimization'"), scorer);
        String far = tomlError("completely_unrelated = 1\n");
        assertTrue(far.contains("unknown key 'completely_unrelated'") && !far.contains("did you mean"), far);
    }

    @Test
    void typeErrorsNameTheKeyAndTheExpectedType() throws IOException {
        assertEquals("n_trials in config.toml must be a whole number (1 or more), got 'abc'",
                tomlError("n_trials = \"abc\"\n"));
        assertTrue(tomlError("n_trials = \"200\"\n").contains("must be a whole number"), "TOML is typed");
        assertTrue(tomlError("n_trials = 0\n").contains("(1 or more), got 0"));
        assertTrue(tomlError("orthogonalize = \"yes\"\n").contains("orthogonalize in config.toml must be true or"
                + " false"));
        assertTrue(tomlError("winsorization_quantile = 1.5\n").contains("must be a number above 0 and at most 1"));
        assertTrue(tomlError("row_normalization = \"half\"\n").contains("must be one of none, pre, full"));
        assertTrue(tomlError("direction_scopes = [\"global\", \"sideways\"]\n")
                .contains("must be one of global, per_layer"));
        assertTrue(tomlError("max_shard_size = \"5 lots\"\n").contains("max_shard_size in config.toml must be a size"));
        assertTrue(tomlError("dtype = \"int4\"\n").contains("one of auto, float32, bfloat16, float16"));
        assertTrue(tomlError("good_prompts = 3\n").contains("good_prompts in config.toml must be a prompt source"));
        assertTrue(tomlError("seed = 1.5\n").contains("seed in config.toml must be a whole number"));
        Files.delete(dir.resolve("config.toml"));
        UserInputException env = assertThrows(UserInputException.class,
                () -> load(Map.of("CRUCIBLE_N_TRIALS", "many"), Map.of()));
        assertEquals("CRUCIBLE_N_TRIALS must be a whole number (1 or more), got 'many'", env.getMessage());
        UserInputException cli = assertThrows(UserInputException.class,
                () -> load(Map.of(), Map.of("max_kl", "-1")));
        assertEquals("--max-kl must be a number above 0, got '-1'", cli.getMessage());
    }

    @Test
    void malformedTomlIsOneLineWithFileAndLine() throws IOException {
        String message = tomlError("n_trials = 5\nseed = 1\nmax_kl = = 0.4\n");
        assertTrue(message.startsWith(dir.resolve("config.toml") + ":3: malformed TOML"), message);
        assertFalse(message.contains("\n"), message);
        String duplicate = tomlError("n_trials = 5\nn_trials = 6\n");
        assertEquals(dir.resolve("config.toml") + ":2: malformed TOML (Duplicate key)", duplicate);
    }

    /** The parser itself reports the token after the duplicate's value: the next key, however far below. */
    @Test
    void aDuplicateKeyIsReportedAtItsOwnLine() throws IOException {
        Map<String, Integer> lineOfTheDuplicate = new LinkedHashMap<>();
        lineOfTheDuplicate.put("n_trials = 3\nseed = 1\nn_trials = 4\nmax_kl = 1\n", 3);
        lineOfTheDuplicate.put("n_trials = 5 # c\n\n# comment\n\nn_trials = 6 # again\n\n# more\nseed = 3\n", 5);
        lineOfTheDuplicate.put("a = [\n  1,\n]\nb = 1\na = [\n  3,\n]\n\nc = 1\n", 5);
        lineOfTheDuplicate.put("seed = 1\nseed = 2", 2);
        lineOfTheDuplicate.put("seed = 1\nseed = 2\n", 2);
        lineOfTheDuplicate.put("x = 1\nt = { y = 1, y = 2 }\nz = 3\n", 2);
        lineOfTheDuplicate.put("[t]\ny = 1\n\n[u]\nz = 1\n[t.v]\nw = 1\nw = 2\n\n\n[x]\n", 8);
        for (Map.Entry<String, Integer> c : lineOfTheDuplicate.entrySet()) {
            assertEquals(dir.resolve("config.toml") + ":" + c.getValue() + ": malformed TOML (Duplicate key)",
                    tomlError(c.getKey()), c.getKey());
        }
    }

    @Test
    void anEmptyConfigFileMeansDefaults() throws IOException {
        assertEquals(200, loadToml("# nothing set\n").nTrials());
    }

    @Test
    void environmentTyposAreCaughtAndOtherVariablesLeftAlone() {
        String typo = assertThrows(UserInputException.class,
                () -> load(Map.of("CRUCIBLE_N_TRAILS", "5"), Map.of())).getMessage();
        assertEquals("unknown setting CRUCIBLE_N_TRAILS; did you mean CRUCIBLE_N_TRIALS?", typo);
        String part = assertThrows(UserInputException.class,
                () -> load(Map.of("CRUCIBLE_GOOD_PROMPTS_SYSTEM_PROMT", "x"), Map.of())).getMessage();
        assertTrue(part.contains("CRUCIBLE_GOOD_PROMPTS_SYSTEM_PROMPT"), part);
        AbliterationSettings s = load(Map.of("CRUCIBLE_DEVICE_PRIORITY", "cuda,cpu", "CRUCIBLE_PLUGINS_DIR", "/p",
                "CRUCIBLE_SOMETHING_UNRELATED_ENTIRELY", "1", "PATH", "/bin", "CRUCIBLE_HEADLESS", "yes"), Map.of());
        assertTrue(s.headless());
        assertTrue(assertThrows(UserInputException.class, () -> load(Map.of("CRUCIBLE_SCORERS", "x"), Map.of()))
                .getMessage().contains("only be set in config.toml"));
    }

    @Test
    void promptSetsLayerSourceAndDressingSeparately() throws IOException {
        Files.writeString(dir.resolve("config.toml"), """
                system_prompt = "Global."

                [good_prompts]
                dataset = "data/good.csv"
                column = "prompt"
                split = "[:300]"
                prefix = "Q: "
                system_prompt = "Be brief."

                [bad_test_prompts]
                split = "[:50]"
                """);
        AbliterationSettings fileOnly = load(Map.of(), Map.of());
        assertEquals("data/good.csv:prompt[:300]", fileOnly.goodPrompts().compact());
        assertEquals("Be brief.", fileOnly.systemPromptFor(fileOnly.goodPrompts()));
        assertEquals("Global.", fileOnly.systemPromptFor(fileOnly.badPrompts()));
        assertEquals("bundled:harmful/test[:50]", fileOnly.badTestPrompts().compact(),
                "a table without dataset adjusts the default set");

        AbliterationSettings layered = load(Map.of("CRUCIBLE_GOOD_PROMPTS", "other.txt[:5]",
                        "CRUCIBLE_BAD_PROMPTS_SUFFIX", " !"),
                Map.of("good_prompts.system_prompt", "From the flag.", "bad_prompts", "org/harmful@train[:10]"));
        assertEquals("other.txt[:5]", layered.goodPrompts().compact(), "a string replaces the whole source");
        assertEquals("Q: ", layered.goodPrompts().prefix(), "and keeps the dressing");
        assertEquals("From the flag.", layered.systemPromptFor(layered.goodPrompts()));
        assertEquals("org/harmful@train[:10]", layered.badPrompts().compact());
        assertEquals(" !", layered.badPrompts().suffix());
    }

    @Test
    void scorersAreTablesWithUniqueNames() throws IOException {
        AbliterationSettings s = loadToml("""
                [[scorers]]
                plugin = "refusals"
                instance_name = "refusals_strict"
                optimization = "minimize"
                [scorers.settings]
                markers = ["sorry", "cannot"]

                [[scorers]]
                plugin = "refusals"
                optimization = "none"

                [[scorers]]
                plugin = "kl_divergence"
                """);
        assertEquals(List.of("refusals_strict", "refusals", "kl_divergence"),
                s.scorers().stream().map(ScorerSpec::instanceName).toList());
        assertEquals(Map.of("markers", List.of("sorry", "cannot")), s.scorers().getFirst().settings());
        assertEquals(Optional.of(Optimization.NONE), s.scorers().get(1).optimization());
        assertEquals(Optional.empty(), s.scorers().get(2).optimization(), "the plugin's default");
        Scorers.requireKnown(s.scorers(), List.of("refusals", "kl_divergence"));
        String unknown = assertThrows(UserInputException.class,
                () -> Scorers.requireKnown(s.scorers(), List.of("refusal", "kl_divergence"))).getMessage();
        assertEquals("unknown scorer 'refusals'; did you mean 'refusal'? (available: kl_divergence, refusal)",
                unknown);
        String twice = tomlError("[[scorers]]\nplugin = \"refusals\"\n[[scorers]]\nplugin = \"refusals\"\n");
        assertTrue(twice.contains("two scorers are named 'refusals'"), twice);
        assertTrue(tomlError("[[scorers]]\noptimization = \"minimize\"\n").contains("needs plugin"));
        assertTrue(tomlError("[[scorers]]\nplugin = \"refusals\"\noptimization = \"lower\"\n")
                .contains("'scorers[1].optimization'"));
    }

    @Test
    void truncatePromptsIsASettingOfEveryLayer() throws IOException {
        assertEquals(PromptTruncation.NONE, load(Map.of(), Map.of()).truncatePrompts(), "too-long prompts are refused");
        Files.writeString(dir.resolve("config.toml"), "truncate_prompts = \"left\"\n");
        assertEquals(PromptTruncation.LEFT, load(Map.of(), Map.of()).truncatePrompts());
        assertEquals(PromptTruncation.RIGHT, load(Map.of("CRUCIBLE_TRUNCATE_PROMPTS", "right"), Map.of()).truncatePrompts());
        assertEquals(PromptTruncation.NONE, load(Map.of("CRUCIBLE_TRUNCATE_PROMPTS", "right"),
                Map.of("truncate_prompts", "none")).truncatePrompts());
        assertEquals("--truncate-prompts must be one of none, left, right, got 'middle'", assertThrows(
                UserInputException.class, () -> load(Map.of(), Map.of("truncate_prompts", "middle"))).getMessage());
    }

    @Test
    void responsePrefixAutoOrLiteral() {
        assertEquals(Optional.empty(), load(Map.of(), Map.of("response_prefix", "AUTO")).responsePrefix());
        assertEquals(Optional.of(""), load(Map.of(), Map.of("response_prefix", "")).responsePrefix());
        assertEquals(Optional.of("<think></think>"),
                load(Map.of("CRUCIBLE_RESPONSE_PREFIX", "<think></think>"), Map.of()).responsePrefix());
    }

    @Test
    void theExampleFileDocumentsEveryKeyAndHoldsTheDefaults() throws IOException {
        Path example = Path.of(System.getProperty("crucible.repo.root", ".."), "config.example.toml").normalize();
        String text = Files.readString(example);
        for (Setting setting : Setting.values()) {
            String key = setting.key();
            assertTrue(text.contains("\n" + key + " = ") || text.contains("\n# " + key + " = ")
                    || text.contains("[" + key + "]") || text.contains("[[" + key + "]]"), key + " is not documented");
            setting.flag().ifPresent(flag -> assertTrue(text.contains(flag), flag + " is not mentioned"));
        }
        AbliterationSettings fromExample = SettingsLoader.load(Optional.of(example), Map.of(), Map.of(), dir, () -> 9);
        AbliterationSettings defaults = load(Map.of(), Map.of());
        Map<String, Object> expected = defaults.toTable();
        expected.put("seed", 9L);
        assertEquals(expected, withLongSeed(fromExample.toTable()));
    }

    @Test
    void theRecordedTableLoadsBackToTheSameSettings() throws IOException {
        AbliterationSettings original = load(Map.of(), Map.of("model", "org/model", "n_trials", 31, "seed", 4,
                "good_prompts", "data/good.parquet:text[10:20]", "good_prompts.prefix", "P ",
                "export_dir", "out", "on_existing", "exit", "max_shard_size", "750MB", "response_prefix", "",
                "direction_scopes", "global"));
        Path recorded = dir.resolve("recorded.toml");
        Files.writeString(recorded, new TomlMapper().writeValueAsString(original.toTable()));
        AbliterationSettings reloaded = SettingsLoader.load(Optional.of(recorded), Map.of(), Map.of(), dir, () -> 0);
        assertEquals(withLongSeed(original.toTable()), withLongSeed(reloaded.toTable()));
        assertEquals(original.goodPrompts(), reloaded.goodPrompts());
        assertEquals(original.exportDir(), reloaded.exportDir());
    }

    private static Map<String, Object> withLongSeed(Map<String, Object> table) {
        table.put("seed", ((Number) table.get("seed")).longValue());
        return table;
    }
}
