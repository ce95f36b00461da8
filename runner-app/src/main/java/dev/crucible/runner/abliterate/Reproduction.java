package dev.crucible.runner.abliterate;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.crucible.api.scoring.Score;
import dev.crucible.runner.abliterate.config.AbliterationSettings;
import dev.crucible.runner.evaluation.Scores;
import dev.crucible.runner.export.ExportFormat;
import dev.crucible.runner.export.FileHashes;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import dev.crucible.runner.version.Version;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code reproduce.json}: what it takes to make an export again — the settings, the trial's parameters and scores,
 * the base scores, the environment, and the SHA-256 of every exported file. The same seed on the same machine
 * reproduces the same bytes.
 */
public final class Reproduction {
    public static final String FILE_NAME = "reproduce.json";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final Map<String, Object> record = new LinkedHashMap<>();

    public Reproduction(AbliterationSettings settings, FrozenTrial trial, List<Objective> objectives, List<Score> baselines,
                        ModelSession session, ExportFormat format) {
        record.put("tool", "crucible " + Version.current());
        record.put("command", "runner abliterate");
        record.put("format", format.userName());
        record.put("model", session.modelDir().toAbsolutePath().toString());
        record.put("seed", settings.seed());
        record.put("settings", settings.toTable());
        record.put("trial", trial.number());
        record.put("parameters", trial.params());
        record.put("scores", Scores.json(objectives, trial.scores()));
        record.put("base_scores", Scores.json(objectives, baselines));
        Map<String, Object> environment = new LinkedHashMap<>();
        environment.put("java", Runtime.version().toString() + " (" + System.getProperty("java.vendor") + ")");
        environment.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        environment.put("backend", session.backend().id());
        environment.put("dtype", session.model().dtype().userName());
        environment.put("available_processors", Runtime.getRuntime().availableProcessors());
        record.put("environment", environment);
    }

    /** Hashes every file already in {@code folder} and writes reproduce.json beside them. */
    public void writeInto(Path folder) throws IOException {
        record.put("files_sha256", FileHashes.ofFolder(folder));
        JSON.writeValue(folder.resolve(FILE_NAME).toFile(), record);
    }
}
