package dev.crucible.runner.export;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.crucible.api.scoring.Score;
import dev.crucible.runner.abliterate.config.AbliterationSettings;
import dev.crucible.runner.cli.VersionProvider;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
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
                        ModelSession session, String format) {
        record.put("tool", "crucible " + VersionProvider.version());
        record.put("command", "runner abliterate");
        record.put("format", format);
        record.put("model", session.modelDir().toAbsolutePath().toString());
        record.put("seed", settings.seed());
        record.put("settings", settings.toTable());
        record.put("trial", trial.number());
        record.put("parameters", trial.params());
        record.put("scores", scores(objectives, trial.scores()));
        record.put("base_scores", scores(objectives, baselines));
        Map<String, Object> environment = new LinkedHashMap<>();
        environment.put("java", Runtime.version().toString() + " (" + System.getProperty("java.vendor") + ")");
        environment.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        environment.put("backend", session.backend().id());
        environment.put("dtype", session.model().dtype().userName());
        environment.put("available_processors", Runtime.getRuntime().availableProcessors());
        record.put("environment", environment);
    }

    public static Map<String, Object> scores(List<Objective> objectives, List<Score> scores) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (int i = 0; i < objectives.size(); i++) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("value", scores.get(i).value());
            s.put("display", scores.get(i).display());
            s.put("optimization", objectives.get(i).direction().name().toLowerCase(java.util.Locale.ROOT));
            out.put(objectives.get(i).name(), s);
        }
        return out;
    }

    /** Hashes every file already in {@code folder} and writes reproduce.json beside them. */
    public void writeInto(Path folder) throws IOException {
        record.put("files_sha256", FileHashes.ofFolder(folder));
        JSON.writeValue(folder.resolve(FILE_NAME).toFile(), record);
    }
}
