package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.Score;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StudyJournalTest {

    private static final List<Objective> OBJECTIVES = List.of(new Objective("refusals", Optimization.MINIMIZE),
            new Objective("kl_divergence", Optimization.MINIMIZE), new Objective("length", Optimization.NONE));
    private static final TpeSampler.Settings TPE = TpeSampler.Settings.defaults().withStartupTrials(10);

    @TempDir
    Path dir;

    private static Map<String, ParameterDistribution> space(double maxWeightHigh) {
        Map<String, ParameterDistribution> space = new LinkedHashMap<>();
        space.put("direction_scope", new ParameterDistribution.Categorical(List.of("global", "per_layer")));
        space.put("direction_index", new ParameterDistribution.FloatRange(10.8, 24.3, false));
        space.put("max_weight", new ParameterDistribution.FloatRange(0.8, maxWeightHigh, false));
        space.put("min_weight_fraction", new ParameterDistribution.FloatRange(0, 1, false));
        space.put("distance", new ParameterDistribution.IntRange(1, 16));
        return space;
    }

    private static StudyHeader header(String model, double maxWeightHigh) {
        return StudyHeader.of(1234, OBJECTIVES, space(maxWeightHigh), Map.of("model", model, "n_startup_trials", 10));
    }

    private static final StudyHeader HEADER = header("/models/gemma", 1.5);

    /** A stand-in for an abliteration trial: draws the space in order, with a dependent parameter. */
    private static List<Score> evaluate(Trial trial) {
        String scope = trial.suggestCategorical("direction_scope", List.of("global", "per_layer"));
        double index = trial.suggestFloat("direction_index", 10.8, 24.3);
        double max = trial.suggestFloat("max_weight", 0.8, 1.5);
        double min = trial.suggestFloat("min_weight_fraction", 0, 1) * max;
        long distance = trial.suggestInt("distance", 1, 16);
        int refusals = (int) Math.round(100 * Math.abs(Math.sin(index + max)) * (scope.equals("global") ? 1 : 0.8));
        double kl = max * max - min + distance / 16.0 + (refusals == 0 ? Double.POSITIVE_INFINITY : 0);
        return List.of(new Score(refusals / 100.0, refusals + "/100"), Score.of(kl), new Score(distance, "x"));
    }

    private static void runTrials(Study study, StudyJournal journal, int count) throws IOException {
        for (int i = 0; i < count; i++) {
            Trial trial = study.ask();
            journal.append(study.tell(trial, evaluate(trial)));
        }
    }

    private Study newStudy(StudyJournal journal) {
        Study study = new Study(journal.header().objectives(), new TpeSampler(TPE), journal.header().seed());
        journal.trials().forEach(study::replay);
        return study;
    }

    private Path journalFile() {
        return dir.resolve(StudyJournal.FILE_NAME);
    }

    @Test
    void trialsRoundTripExactly() throws IOException {
        Study study;
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            study = newStudy(journal);
            runTrials(study, journal, 12);
            Trial failing = study.ask();
            failing.suggestCategorical("direction_scope", List.of("global", "per_layer"));
            journal.append(study.fail(failing, "CUDA out of memory"));
        }
        try (StudyJournal reopened = StudyJournal.open(dir, header("/models/gemma", 1.5), OnExisting.CONTINUE)) {
            assertEquals(study.trials(), reopened.trials());
            assertEquals(HEADER, reopened.header());
        }
        List<String> lines = Files.readAllLines(journalFile());
        assertEquals(1 + 13, lines.size());
        assertTrue(lines.get(0).contains("\"record\":\"header\"") && lines.get(0).contains("\"format_version\":1"));
        assertTrue(lines.get(13).contains("\"failure\":\"CUDA out of memory\""));
        assertEquals(study.trials(), StudyJournal.read(dir).trials());
    }

    @Test
    void resumedStudyDrawsWhatAnUninterruptedOneDraws() throws IOException {
        Path uninterruptedDir = dir.resolve("uninterrupted");
        Study uninterrupted;
        try (StudyJournal journal = StudyJournal.open(uninterruptedDir, HEADER, OnExisting.EXIT)) {
            uninterrupted = newStudy(journal);
            runTrials(uninterrupted, journal, 40);
        }

        Path resumedDir = dir.resolve("resumed");
        try (StudyJournal journal = StudyJournal.open(resumedDir, HEADER, OnExisting.EXIT)) {
            Study first = newStudy(journal);
            runTrials(first, journal, 25);
            // Trial 25 was running when the process died: drawn, never journaled.
            Trial lost = first.ask();
            evaluate(lost);
        }
        Study resumed;
        try (StudyJournal journal = StudyJournal.open(resumedDir, HEADER, OnExisting.CONTINUE)) {
            assertEquals(25, journal.trials().size());
            resumed = newStudy(journal);
            assertEquals(25, resumed.nextTrialNumber());
            runTrials(resumed, journal, 15);
        }
        assertEquals(paramsOf(uninterrupted.trials()), paramsOf(resumed.trials()));
        assertEquals(40, StudyJournal.read(resumedDir).trials().size());
    }

    private static List<Map<String, Object>> paramsOf(List<FrozenTrial> trials) {
        return trials.stream().map(FrozenTrial::params).toList();
    }

    @Test
    void tornLastLineIsIgnoredAndCutOffBeforeAppending() throws IOException {
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            runTrials(newStudy(journal), journal, 5);
        }
        long intact = Files.size(journalFile());
        String lastLine = Files.readAllLines(journalFile()).getLast();
        String torn = lastLine.replace("\"number\":4", "\"number\":5").substring(0, lastLine.length() / 2);
        Files.writeString(journalFile(), torn, StandardOpenOption.APPEND);

        assertEquals(5, StudyJournal.read(dir).trials().size());
        assertEquals(intact + torn.length(), Files.size(journalFile()), "reading leaves the file alone");
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.CONTINUE)) {
            assertEquals(5, journal.trials().size());
            assertEquals(intact, Files.size(journalFile()), "the torn tail is cut before appending");
            assertEquals(Optional.of(new StudyJournal.TornRecord(7, 5)), journal.repairedTornRecord(),
                    "line 7 (after the header and trials 0-4) was recording trial 5");
            runTrials(newStudy(journal), journal, 1);
        }
        assertEquals(List.of(0, 1, 2, 3, 4, 5),
                StudyJournal.read(dir).trials().stream().map(FrozenTrial::number).toList());
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.CONTINUE)) {
            assertEquals(Optional.empty(), journal.repairedTornRecord(), "an intact journal reports nothing");
        }
    }

    @Test
    void aRecordCutBeforeItsNumberIsTheNextTrial() throws IOException {
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            runTrials(newStudy(journal), journal, 3);
        }
        String lastLine = Files.readAllLines(journalFile()).getLast();
        assertTrue(lastLine.contains("\"number\":2,"), lastLine);
        for (String torn : List.of("{\"record\":\"tri", "{\"record\":\"trial\",\"number\":1")) {
            long intact = Files.size(journalFile());
            Files.writeString(journalFile(), torn, StandardOpenOption.APPEND);
            try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.CONTINUE)) {
                // "number":1 at the very end may be the start of 12 or 13: the number is not trusted, the next one is.
                assertEquals(Optional.of(new StudyJournal.TornRecord(5, 3)), journal.repairedTornRecord(), torn);
            }
            assertEquals(intact, Files.size(journalFile()));
        }
    }

    @Test
    void onlyATornHeaderMeansANewStudy() throws IOException {
        Files.writeString(journalFile(), "{\"record\":\"header\",\"format_ver");
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.CONTINUE)) {
            assertEquals(0, journal.trials().size());
        }
        assertEquals(1, Files.readAllLines(journalFile()).size());
    }

    @Test
    void malformedLineInTheMiddleIsAnErrorNamingTheLine() throws IOException {
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            runTrials(newStudy(journal), journal, 4);
        }
        List<String> lines = new ArrayList<>(Files.readAllLines(journalFile()));
        lines.set(2, lines.get(2).replace("\"state\":\"complete\"", "\"state\":\"exploded\""));
        Files.write(journalFile(), lines);
        UserInputException e = assertThrows(UserInputException.class,
                () -> StudyJournal.open(dir, HEADER, OnExisting.CONTINUE));
        assertTrue(e.getMessage().contains("line 3"), e.getMessage());
        assertTrue(e.getMessage().contains("exploded"), e.getMessage());

        lines.set(2, "{not json");
        Files.write(journalFile(), lines);
        e = assertThrows(UserInputException.class, () -> StudyJournal.read(dir));
        assertTrue(e.getMessage().contains("line 3") && e.getMessage().contains("not valid JSON"), e.getMessage());
    }

    @Test
    void existingStudyWithExitModeSaysWhichFlagToUse() throws IOException {
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            runTrials(newStudy(journal), journal, 3);
        }
        UserInputException e = assertThrows(UserInputException.class,
                () -> StudyJournal.open(dir, HEADER, OnExisting.EXIT));
        assertTrue(e.getMessage().contains("already exists (3 finished trials)"), e.getMessage());
        assertTrue(e.getMessage().contains("--on-existing continue|restart|exit"), e.getMessage());
        assertEquals(OnExisting.RESTART, OnExisting.parse(" Restart "));
        assertThrows(UserInputException.class, () -> OnExisting.parse("resume"));
    }

    @Test
    void restartKeepsTheOldJournalAsABackup() throws IOException {
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            runTrials(newStudy(journal), journal, 3);
        }
        byte[] old = Files.readAllBytes(journalFile());
        Clock clock = Clock.fixed(Instant.parse("2025-03-04T05:06:07Z"), ZoneOffset.UTC);
        // A different model is fine when starting over.
        StudyHeader other = header("/models/other", 1.5);
        try (StudyJournal journal = StudyJournal.open(dir, other, OnExisting.RESTART, clock, StudyJournal.FSYNC)) {
            Path backup = dir.resolve("journal.jsonl.bak-20250304T050607Z");
            assertEquals(backup, journal.backup().orElseThrow());
            assertEquals(0, journal.trials().size());
        }
        assertEquals(new String(old, StandardCharsets.UTF_8),
                Files.readString(dir.resolve("journal.jsonl.bak-20250304T050607Z")));
        assertEquals(1, Files.readAllLines(journalFile()).size());
        try (StudyJournal journal = StudyJournal.open(dir, other, OnExisting.RESTART, clock, StudyJournal.FSYNC)) {
            assertEquals(dir.resolve("journal.jsonl.bak-20250304T050607Z-1"), journal.backup().orElseThrow());
        }
    }

    @Test
    void continuingADifferentStudyIsRefusedWithTheDifference() throws IOException {
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            runTrials(newStudy(journal), journal, 2);
        }
        UserInputException model = assertThrows(UserInputException.class,
                () -> StudyJournal.open(dir, header("/models/llama", 1.5), OnExisting.CONTINUE));
        assertTrue(model.getMessage().contains("model (journal: \"/models/gemma\", this run: \"/models/llama\")"),
                model.getMessage());
        UserInputException space = assertThrows(UserInputException.class,
                () -> StudyJournal.open(dir, header("/models/gemma", 2.0), OnExisting.CONTINUE));
        assertTrue(space.getMessage().contains("search space for 'max_weight'"), space.getMessage());
        StudyHeader otherObjectives = StudyHeader.of(1234, OBJECTIVES.subList(0, 2), space(1.5),
                Map.of("model", "/models/gemma", "n_startup_trials", 10));
        UserInputException objectives = assertThrows(UserInputException.class,
                () -> StudyJournal.open(dir, otherObjectives, OnExisting.CONTINUE));
        assertTrue(objectives.getMessage().contains("objectives"), objectives.getMessage());
        StudyHeader otherSeed = StudyHeader.of(99, OBJECTIVES, space(1.5), Map.of("model", "/models/gemma",
                "n_startup_trials", 10));
        assertTrue(assertThrows(UserInputException.class, () -> StudyJournal.open(dir, otherSeed, OnExisting.CONTINUE))
                .getMessage().contains("seed (journal: 1234, this run: 99)"));
    }

    @Test
    void everyLineIsForcedToDiskAfterItIsFullyWritten() throws IOException {
        List<Long> sizesAtForce = new ArrayList<>();
        StudyJournal.Sync watching = channel -> {
            sizesAtForce.add(channel.size());
            StudyJournal.FSYNC.force(channel);
        };
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT, Clock.systemUTC(), watching)) {
            Study study = newStudy(journal);
            assertEquals(List.of(Files.size(journalFile())), sizesAtForce, "the header is forced once, whole");
            for (int i = 0; i < 3; i++) {
                Trial trial = study.ask();
                FrozenTrial finished = study.tell(trial, evaluate(trial));
                long before = Files.size(journalFile());
                journal.append(finished);
                long after = Files.size(journalFile());
                assertEquals(i + 2, sizesAtForce.size(), "one force per appended line");
                assertEquals(after, sizesAtForce.getLast(), "forced after the whole line was written");
                assertTrue(after > before);
            }
        }
    }

    /** A disk that fills up during the study (simulated where the force reports it, as fsync can): one line, the trials before kept. */
    @Test
    void aFullDiskWhileJournalingIsOneLineThatSaysWhatIsKept() throws IOException {
        int[] forces = {0};
        StudyJournal.Sync fillsUp = channel -> {
            if (++forces[0] == 4) {
                throw new IOException("No space left on device");
            }
            StudyJournal.FSYNC.force(channel);
        };
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT, Clock.systemUTC(), fillsUp)) {
            Study study = newStudy(journal);
            runTrials(study, journal, 2);
            Trial trial = study.ask();
            FrozenTrial third = study.tell(trial, evaluate(trial));
            dev.crucible.api.io.WriteFailure e = assertThrows(dev.crucible.api.io.WriteFailure.class, () -> journal.append(third));
            assertTrue(e.getMessage().startsWith("cannot write " + journalFile() + ": no space left on device; "), e.getMessage());
            assertTrue(e.getMessage().endsWith("; the 2 trials journaled before it are kept, and the same command continues the study"),
                    e.getMessage());
        }
        // The line whose force failed may or may not have reached the disk; the ones before it did.
        assertEquals(List.of(0, 1), StudyJournal.read(dir).trials().stream().map(FrozenTrial::number).limit(2).toList());
    }

    @Test
    void aSecondOpenWhileTheFirstIsActiveIsRefused() throws IOException {
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            UserInputException e = assertThrows(UserInputException.class,
                    () -> StudyJournal.open(dir, HEADER, OnExisting.CONTINUE));
            assertTrue(e.getMessage().contains("in use by another run"), e.getMessage());
        }
    }

    @Test
    void journalFromANewerFormatIsRefused() throws IOException {
        Files.writeString(journalFile(), "{\"record\":\"header\",\"format_version\":2}\n");
        UserInputException e = assertThrows(UserInputException.class,
                () -> StudyJournal.open(dir, HEADER, OnExisting.CONTINUE));
        assertTrue(e.getMessage().contains("format 2 from a newer Crucible"), e.getMessage());
    }

    @Test
    void infiniteScoresSurviveTheRoundTrip() throws IOException {
        Study study = new Study(OBJECTIVES, new RandomSampler(), 1);
        Trial trial = study.ask();
        trial.suggestFloat("max_weight", 0.8, 1.5);
        FrozenTrial finished = study.tell(trial, List.of(new Score(0.0, "0/100"),
                new Score(Double.POSITIVE_INFINITY, "inf"), new Score(Double.NaN, "n/a")));
        try (StudyJournal journal = StudyJournal.open(dir, HEADER, OnExisting.EXIT)) {
            journal.append(finished);
            assertThrows(IllegalArgumentException.class, () -> journal.append(finished));
        }
        FrozenTrial read = StudyJournal.read(dir).trials().getFirst();
        assertEquals(Double.POSITIVE_INFINITY, read.scores().get(1).value());
        assertTrue(Double.isNaN(read.scores().get(2).value()));
        assertEquals(finished, read);
    }
}
