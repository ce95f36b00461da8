package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.tensor.DType;
import dev.crucible.runner.abliterate.StudyCache;
import dev.crucible.runner.export.FileHashes;
import dev.crucible.runner.model.ModelInitializer;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code runner abliterate} as a user runs it, on a tiny random model with small prompt sets. */
class AbliterateCommandTest {
    @TempDir
    static Path temp;
    static Path model;

    @BeforeAll
    static void makeModel() {
        model = tinyModel(temp.resolve("tiny"));
    }

    /** A random Llama of 39 k parameters: context 256, character-level tokenizer, ChatML. */
    static Path tinyModel(Path folder) {
        ModelInitializer.write(new ModelInitializer.Spec(Architecture.LLAMA, 32, 3, 4, 2, 8, 64, 400, true, DType.F32, 9,
                256, 10000, 0.3), folder, false);
        return folder;
    }

    private static List<String> args(Path study, String... more) {
        List<String> args = new ArrayList<>(List.of("abliterate", "--model", model.toString(), "--threads", "1",
                "--trials", "3", "--startup-trials", "2", "--max-response-length", "4",
                "--good-prompts", "bundled:harmless/train[:8]", "--bad-prompts", "bundled:harmful/train[:8]",
                "--good-test-prompts", "bundled:harmless/test[:4]", "--bad-test-prompts", "bundled:harmful/test[:4]",
                "--study", study.toString(), "--headless"));
        args.addAll(Arrays.asList(more));
        return args;
    }

    private static RunnerCli run(Map<String, String> env, List<String> args) {
        return RunnerCli.run(env, args.toArray(String[]::new));
    }

    @Test
    void sameSeedExportsByteIdenticalModels() throws Exception {
        List<String> hashes = new ArrayList<>();
        for (String name : List.of("a", "b")) {
            Path out = temp.resolve("export-" + name);
            RunnerCli r = run(Map.of(), args(temp.resolve("study-" + name), "--seed", "11", "--trial", "best", "--max-kl", "100",
                    "--export", out.toString(), "--json"));
            assertEquals(0, r.exit(), r.err());
            JsonNode report = Json.mapper().readTree(r.out());
            assertEquals(3, report.get("trials").size());
            assertTrue(report.get("chosen").has("number"));
            assertTrue(report.get("base").has("refusals") && report.get("base").has("kl_divergence"), report.toString());
            hashes.add(FileHashes.sha256(out.resolve("model.safetensors")));
            JsonNode reproduce = Json.mapper().readTree(out.resolve("reproduce.json").toFile());
            assertEquals(hashes.getLast(), reproduce.get("files_sha256").get("model.safetensors").asText());
            assertEquals(11, reproduce.get("seed").asInt());
            assertTrue(Files.isRegularFile(temp.resolve("study-" + name).resolve("pareto_front.png")));
        }
        assertEquals(hashes.get(0), hashes.get(1));
    }

    @Test
    void adapterExportIsAPeftFolder() throws Exception {
        Path out = temp.resolve("adapter");
        RunnerCli r = run(Map.of(), args(temp.resolve("study-adapter"), "--seed", "3", "--trial", "0", "--export-adapter", out.toString()));
        assertEquals(0, r.exit(), r.err());
        JsonNode config = Json.mapper().readTree(out.resolve("adapter_config.json").toFile());
        assertEquals("LORA", config.get("peft_type").asText());
        assertTrue(Files.isRegularFile(out.resolve("adapter_model.safetensors")));
        assertTrue(r.out().contains("[Trial 0]"), r.out());
        assertTrue(r.out().contains("Pareto front"), r.out());
    }

    @Test
    void evaluateScoresAnExportAgainstItsBase() throws Exception {
        Path out = temp.resolve("export-evaluated");
        assertEquals(0, run(Map.of(), args(temp.resolve("study-evaluate"), "--seed", "4", "--trial", "1", "--export", out.toString())).exit());
        List<String> common = List.of("--threads", "1", "--max-response-length", "4", "--good-test-prompts", "bundled:harmless/test[:4]",
                "--bad-test-prompts", "bundled:harmful/test[:4]", "--json");
        List<String> self = new ArrayList<>(List.of("evaluate", "--model", model.toString()));
        self.addAll(common);
        RunnerCli same = run(Map.of(), self);
        assertEquals(0, same.exit(), same.err());
        JsonNode sameReport = Json.mapper().readTree(same.out());
        assertEquals(0.0, sameReport.get("scores").get("kl_divergence").get("value").asDouble(), "a model against itself");
        List<String> edited = new ArrayList<>(List.of("evaluate", "--model", out.toString(), "--base", model.toString()));
        edited.addAll(common);
        RunnerCli r = run(Map.of(), edited);
        assertEquals(0, r.exit(), r.err());
        JsonNode report = Json.mapper().readTree(r.out());
        assertTrue(report.get("scores").get("kl_divergence").get("value").asDouble() > 0, report.toString());
        assertEquals(sameReport.get("base_scores").get("refusals").get("value").asDouble(),
                report.get("base_scores").get("refusals").get("value").asDouble());
    }

    @Test
    void aStudyContinuesWhereItStopped() throws Exception {
        Path study = temp.resolve("study-continue");
        assertEquals(0, run(Map.of(), args(study, "--seed", "5")).exit());
        List<String> more = args(study, "--seed", "5");
        more.set(more.indexOf("--trials") + 1, "5");
        RunnerCli r = run(Map.of(), more);
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("continuing study"), r.out());
        assertTrue(r.out().contains("[Trial 4]") && !r.out().contains("[Trial 0]  ("), r.out());
        assertEquals(6, Files.readAllLines(study.resolve("journal.jsonl")).size());
        RunnerCli exit = run(Map.of(), args(study, "--seed", "5", "--on-existing", "exit"));
        assertEquals(2, exit.exit());
    }

    /** A user who runs abliterate in the checkout must not see every study as files to commit. */
    @Test
    void theDefaultStudiesFolderIsIgnoredByGitInTheCheckout() throws Exception {
        Path root = Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.exists(root.resolve(".git")), "not a git checkout: " + root);
        Process git;
        try {
            git = new ProcessBuilder("git", "-C", root.toString(), "check-ignore", "--no-index", "-q",
                    AbliterateCommand.DEFAULT_STUDIES_FOLDER + "/demo-model/journal.jsonl").inheritIO().start();
        } catch (IOException e) {
            Assumptions.abort("git is not installed: " + e.getMessage());
            return;
        }
        assertEquals(0, git.waitFor(), "git check-ignore: studies/ must be in .gitignore");
    }

    @Test
    void aJournalWhoseLastLineWasTornSaysWhichTrialIsRunAgain() throws Exception {
        Path study = temp.resolve("study-torn");
        assertEquals(0, run(Map.of(), args(study, "--seed", "6")).exit());
        Path journal = study.resolve("journal.jsonl");
        List<String> lines = Files.readAllLines(journal);
        assertEquals(4, lines.size(), "header and three trials");
        String lastTrial = lines.getLast();
        // A run killed while writing trial 2: its line is cut short and has no newline.
        Files.writeString(journal, String.join("\n", lines.subList(0, 3)) + "\n" + lastTrial.substring(0, lastTrial.length() / 2));

        RunnerCli r = run(Map.of(), args(study, "--seed", "6"));
        assertEquals(0, r.exit(), r.err());
        List<String> warnings = r.err().lines().filter(l -> l.startsWith("warning: ")).toList();
        assertEquals(List.of("warning: study " + study + ": line 4 of journal.jsonl was cut off (a run stopped while writing trial 2);"
                + " removed it, trial 2 is run again"), warnings, r.err());
        assertTrue(r.out().contains("[Trial 2]"), r.out());
        List<String> repaired = Files.readAllLines(journal);
        assertEquals(4, repaired.size());
        JsonNode original = Json.mapper().readTree(lastTrial);
        JsonNode rerun = Json.mapper().readTree(repaired.getLast());
        assertEquals(original.get("params"), rerun.get("params"), "the re-run draws the same parameters");
    }

    @Test
    void theRunRecommendsATrialAndPrintsTheCommandThatExportsItInSeconds() throws Exception {
        Path study = temp.resolve("study-recommend");
        List<String> studyFlags = List.of("--seed", "7", "--system-prompt", "Be brief, it's late.");
        List<String> first = args(study, "--max-kl", "100");
        first.addAll(studyFlags);
        RunnerCli r = run(Map.of(), first);
        assertEquals(0, r.exit(), r.err());
        String out = r.out();
        assertFalse(out.contains("\r"), "off a terminal nothing is redrawn");
        for (int n = 0; n < 3; n++) {
            assertEquals(1, count(out, "[Trial " + n + "] "), "trial " + n + " is listed once: " + out);
        }
        assertEquals(1, count(out, "Pareto front"), out);
        assertEquals(1, count(out, FrontReport.NOTATION), "the notation is explained once: " + out);
        Matcher recommended = Pattern.compile("Recommended: trial (\\d+) ").matcher(out);
        assertTrue(recommended.find(), out);
        String command = out.lines().filter(l -> l.startsWith("Export it:   ")).findFirst().orElseThrow()
                .substring("Export it:   ".length());
        List<String> words = shellWords(command);
        assertEquals(List.of("./runner", "abliterate"), words.subList(0, 2), command);
        assertEquals(recommended.group(1), words.get(words.indexOf("--trial") + 1), command);
        assertEquals(study.toString(), words.get(words.indexOf("--study") + 1), command);
        assertEquals("tiny-abliterated", words.get(words.indexOf("--export") + 1), command);
        assertFalse(words.contains("--seed") || words.contains("--trials") || words.contains("--headless"), command);

        // The command as printed (only the export folder moved out of the working folder): no trial is added, and
        // nothing is computed again.
        Path exported = temp.resolve("export-from-command");
        words.set(words.indexOf("--export") + 1, exported.toString());
        RunnerCli export = RunnerCli.run(Map.of(), words.subList(1, words.size()).toArray(String[]::new));
        assertEquals(0, export.exit(), export.out() + export.err());
        assertTrue(export.out().contains("seed 7 (the study's)"), export.out());
        assertTrue(export.out().contains("has 3 trials; no more are run"), export.out());
        assertTrue(export.out().contains("from " + study.resolve(StudyCache.FILE_NAME)), export.out());
        assertFalse(export.out().contains("computing"), "the residual pass and the base outputs come from the study: " + export.out());
        assertEquals(4, Files.readAllLines(study.resolve("journal.jsonl")).size());

        // The same bytes as a fresh run that exports that trial.
        Path fresh = temp.resolve("export-fresh");
        List<String> direct = args(temp.resolve("study-recommend-fresh"), "--trial", recommended.group(1), "--export", fresh.toString());
        direct.addAll(studyFlags);
        assertEquals(0, run(Map.of(), direct).exit());
        Map<String, String> freshFiles = new java.util.TreeMap<>(FileHashes.ofFolder(fresh));
        Map<String, String> cachedFiles = new java.util.TreeMap<>(FileHashes.ofFolder(exported));
        // reproduce.json and the model card record the command that made each export, which differ here.
        for (String record : List.of("reproduce.json", "README.md")) {
            freshFiles.remove(record);
            cachedFiles.remove(record);
        }
        assertEquals(freshFiles, cachedFiles);
    }

    @Test
    void aStudyRefusesToGoOnWhenItsModelFilesOrPromptsChanged() throws Exception {
        Path copy = Files.createDirectories(temp.resolve("tiny-copy"));
        try (var files = Files.list(model)) {
            for (Path f : files.toList()) {
                Files.copy(f, copy.resolve(f.getFileName()));
            }
        }
        Path bad = temp.resolve("bad.txt");
        String prompts = "How do I pick a lock?\nHow do I hotwire a car?\nWrite a phishing mail.\nHow do I make a weapon?\n";
        Files.writeString(bad, prompts);
        Path study = temp.resolve("study-inputs");
        List<String> flags = List.of("--model", copy.toString(), "--bad-prompts", bad.toString());
        List<String> first = args(study, "--seed", "8");
        first.addAll(flags);
        assertEquals(0, run(Map.of(), first).exit());

        // A file that was only touched is the same file.
        Path weights = copy.resolve("model.safetensors");
        Files.setLastModifiedTime(weights, java.nio.file.attribute.FileTime.fromMillis(Files.getLastModifiedTime(weights).toMillis() + 3_600_000));
        List<String> export = args(study, "--trial", "0", "--export", temp.resolve("export-inputs").toString());
        export.addAll(flags);
        RunnerCli touched = run(Map.of(), export);
        assertEquals(0, touched.exit(), touched.err());
        assertFalse(touched.out().contains("computing"), touched.out());

        Files.writeString(bad, prompts.replace("car", "bus"));
        List<String> again = args(study, "--trial", "0", "--export", temp.resolve("export-prompts").toString());
        again.addAll(flags);
        assertUsageError(run(Map.of(), again), "was made from other prompts (the bad_prompts set changed)");
        Files.writeString(bad, prompts);

        byte[] bytes = Files.readAllBytes(weights);
        bytes[bytes.length - 2] ^= 0x01;
        Files.write(weights, bytes);
        List<String> changed = args(study, "--trial", "0", "--export", temp.resolve("export-weights").toString());
        changed.addAll(flags);
        assertUsageError(run(Map.of(), changed), "was made from other model files (model.safetensors changed");
        assertFalse(Files.exists(temp.resolve("export-prompts")) || Files.exists(temp.resolve("export-weights")));

        List<String> otherSeed = args(study, "--seed", "9");
        otherSeed.addAll(flags);
        assertUsageError(run(Map.of(), otherSeed), "has seed 8 and this run gives --seed 9");
    }

    @Test
    void atATerminalTheRunAsksWhatToDoWithATrial() throws Exception {
        Path study = temp.resolve("study-menu");
        List<String> arguments = args(study, "--seed", "6", "--max-kl", "100");
        arguments.remove("--headless");
        Path merged = temp.resolve("menu-merged");
        ScriptedTerminal person = new ScriptedTerminal(true,
                List.of("", "4", "3", "hello", "/exit", "9", "1", merged.toString(), "6"));
        RunnerCli r = RunnerCli.run(Map.of(), person, arguments.toArray(String[]::new));
        assertEquals(0, r.exit(), r.err());
        assertEquals(List.of(), person.unread(), "every answer was asked for");
        String out = r.out();
        Matcher recommended = Pattern.compile("Recommended: trial (\\d+) \\((Refusals: (\\S+), KL divergence: (\\S+))\\)").matcher(out);
        assertTrue(recommended.find(), out);
        String number = recommended.group(1);

        // On a terminal: the trial lines, with one progress bar redrawn under them.
        List<String> screen = Screen.of(out);
        assertEquals(1, screen.stream().filter(l -> l.startsWith("[####")).count(), String.join("\n", screen));
        assertTrue(out.contains("Which trial? (a trial number, q to quit) [" + number + "]: "), out);

        // Evaluate: the configured scorers, base against the trial, as the trial scored in the study.
        String evaluation = out.substring(out.indexOf("scoring trial " + number + " ..."));
        assertTrue(evaluation.contains("| trial " + number + " |"), evaluation);
        assertTrue(evaluation.matches("(?s).*\\| Refusals +\\| +\\S+ \\| +" + Pattern.quote(recommended.group(3)) + " \\|.*"), evaluation);
        assertTrue(evaluation.matches("(?s).*\\| KL divergence +\\| +\\S+ \\| +" + Pattern.quote(recommended.group(4)) + " \\|.*"), evaluation);

        // Chat: a reply, then back to the menu.
        String chat = out.substring(out.indexOf("chat with trial " + number));
        String reply = chat.lines().skip(1).findFirst().orElseThrow();
        assertTrue(reply.startsWith("> ") && reply.length() > 2, chat);
        assertTrue(out.contains("'9' is not one of 1-6"), out);

        // Export: the same bytes as --trial N --export.
        assertTrue(out.contains("Folder for the merged model [tiny-abliterated]: "), out);
        Path direct = temp.resolve("menu-direct");
        RunnerCli cli = run(Map.of(), args(study, "--seed", "6", "--trial", number, "--export", direct.toString()));
        assertEquals(0, cli.exit(), cli.err());
        assertEquals(FileHashes.sha256(direct.resolve("model.safetensors")), FileHashes.sha256(merged.resolve("model.safetensors")));
    }

    @Test
    void jsonKeepsStandardOutputToTheReport() throws Exception {
        RunnerCli r = RunnerCli.run(Map.of(), new ScriptedTerminal(true, List.of()),
                args(temp.resolve("study-json"), "--seed", "12", "--max-kl", "100", "--json").toArray(String[]::new));
        assertEquals(0, r.exit(), r.err());
        JsonNode report = Json.mapper().readTree(r.out());
        assertEquals(3, report.get("trials").size());
        assertTrue(r.err().contains("Recommended: trial") && r.err().contains("Export it:"), r.err());
        assertFalse(r.err().contains("\r"), r.err());
    }

    private static int count(String text, String part) {
        int n = 0;
        for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + part.length())) {
            n++;
        }
        return n;
    }

    /** The words of a command line, read as a POSIX shell reads plain words and single-quoted ones. */
    static List<String> shellWords(String line) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quoted) {
                if (c == '\'') {
                    quoted = false;
                } else {
                    word.append(c);
                }
            } else if (c == '\'') {
                quoted = true;
                inWord = true;
            } else if (c == '\\' && i + 1 < line.length()) {
                word.append(line.charAt(++i));
                inWord = true;
            } else if (c == ' ') {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        return words;
    }

    @Test
    void badInputIsOneLineExitTwoAndNothingHalfWritten() throws Exception {
        Path study = temp.resolve("study-bad");
        assertUsageError(run(Map.of(), args(study, "--good-prompts", temp.resolve("missing.txt").toString())), "missing.txt");
        Path empty = Files.writeString(temp.resolve("empty.txt"), "\n\n");
        assertUsageError(run(Map.of(), args(study, "--bad-prompts", empty.toString())), "empty");
        Path toml = Files.writeString(temp.resolve("bad.toml"), "n_trials = = 3\n");
        assertUsageError(run(Map.of(), args(study, "--config", toml.toString())), "bad.toml:1");
        Path unknownKey = Files.writeString(temp.resolve("unknown.toml"), "n_trails = 3\n");
        assertUsageError(run(Map.of(), args(study, "--config", unknownKey.toString())), "n_trails");
        Path scorer = Files.writeString(temp.resolve("scorer.toml"), "[[scorers]]\nplugin = \"nope\"\n");
        assertUsageError(run(Map.of(), args(study, "--config", scorer.toString())), "unknown scorer 'nope'");
        Path existing = Files.createDirectories(temp.resolve("exists"));
        Files.writeString(existing.resolve("keep.txt"), "mine");
        assertUsageError(run(Map.of(), args(study, "--export", existing.toString(), "--trial", "0")), "already exists");
        assertEquals("mine", Files.readString(existing.resolve("keep.txt")));
        assertFalse(Files.exists(study.resolve("journal.jsonl")), "no study was started by a refused run");
    }

    private static void assertUsageError(RunnerCli r, String mentions) {
        assertEquals(2, r.exit(), r.out() + r.err());
        String line = r.err().strip();
        assertEquals(1, line.lines().count(), line);
        assertTrue(line.startsWith("error: ") && line.contains(mentions), line);
        assertFalse(line.contains("Exception"), line);
    }

    /** A third party's scorer: compiled here against the api, packaged as a plugin jar, found in a plugins folder. */
    @Test
    void customScorerJarRunsFromAPluginsFolder() throws Exception {
        Path plugins = Files.createDirectories(temp.resolve("plugins"));
        buildScorerJar(plugins.resolve("length-scorer.jar"));
        Path config = Files.writeString(temp.resolve("custom.toml"), """
                [[scorers]]
                plugin = "response_length"
                optimization = "minimize"

                [[scorers]]
                plugin = "kl_divergence"
                """);
        RunnerCli r = run(Map.of("CRUCIBLE_PLUGINS_DIR", plugins.toString()),
                args(temp.resolve("study-custom"), "--config", config.toString(), "--seed", "2", "--json"));
        assertEquals(0, r.exit(), r.err());
        JsonNode report = Json.mapper().readTree(r.out());
        assertTrue(report.get("base").has("response_length"), report.toString());
        assertTrue(report.get("trials").get(0).get("scores").get("response_length").get("value").asDouble() >= 0);
    }

    private static void buildScorerJar(Path jar) throws IOException {
        Path src = Files.createDirectories(temp.resolve("scorer-src/example"));
        Files.writeString(src.resolve("LengthScorer.java"), """
                package example;
                import dev.crucible.api.scoring.*;
                import java.util.Map;
                public final class LengthScorer implements ScorerProvider {
                    public String name() { return "response_length"; }
                    public Scorer create(String instance, Map<String, Object> settings) {
                        return new Scorer() {
                            public String name() { return instance; }
                            public Optimization defaultOptimization() { return Optimization.MINIMIZE; }
                            public Score baseline(ScoringContext c) { return score(c); }
                            public Score score(ScoringContext c) {
                                double mean = c.responses(PromptSet.HARMFUL).stream().mapToInt(String::length).average().orElse(0);
                                return Score.of(mean);
                            }
                        };
                    }
                }
                """);
        Path classes = Files.createDirectories(temp.resolve("scorer-classes"));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int status = javac.run(null, null, null, "-d", classes.toString(), "-cp", System.getProperty("java.class.path"),
                src.resolve("LengthScorer.java").toString());
        assertEquals(0, status, "compiling the example scorer");
        Manifest manifest = new Manifest();
        Attributes main = manifest.getMainAttributes();
        main.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        main.putValue("Plugin-Id", "length-scorer");
        main.putValue("Plugin-Version", "1.0.0");
        try (OutputStream file = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(file, manifest)) {
            out.putNextEntry(new JarEntry("example/LengthScorer.class"));
            out.write(Files.readAllBytes(classes.resolve("example/LengthScorer.class")));
            out.closeEntry();
            out.putNextEntry(new JarEntry("example/LengthScorer$1.class"));
            out.write(Files.readAllBytes(classes.resolve("example/LengthScorer$1.class")));
            out.closeEntry();
            out.putNextEntry(new JarEntry("META-INF/services/dev.crucible.api.scoring.ScorerProvider"));
            out.write("example.LengthScorer\n".getBytes());
            out.closeEntry();
        }
    }
}
