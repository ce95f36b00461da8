package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.abliterate.StudyCache;
import dev.crucible.runner.abliterate.config.AbliterationSettings;
import dev.crucible.runner.abliterate.config.Setting;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.study.OnExisting;
import dev.crucible.runner.study.StudyJournal;
import dev.crucible.runner.version.Version;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * An abliteration run's study as the run finds it before any work: whether one exists there and goes on, and what a
 * run on it takes from it. A continued study keeps its seed (a run that gives none uses the study's); a run that
 * exports a trial of it adds no trials unless a trial count is given; and it is refused at once when the model or
 * the prompts it was made from have changed.
 */
final class StudyStart {
    private final Path dir;
    private final OnExisting mode;
    private final Optional<StudyJournal.Contents> existing;

    private StudyStart(Path dir, OnExisting mode, Optional<StudyJournal.Contents> existing) {
        this.dir = dir;
        this.mode = mode;
        this.existing = existing;
    }

    /**
     * Reads the study in {@code dir}, if one was started there, and settles what to do with it: {@code configured}
     * when given, else the person's answer, else continue.
     */
    static StudyStart find(Path dir, Optional<OnExisting> configured, Optional<Interactive> person) throws IOException {
        Optional<StudyJournal.Contents> existing = StudyJournal.readIfStarted(dir);
        OnExisting mode = configured.orElseGet(() -> existing.isPresent() && person.isPresent()
                ? OnExisting.parse(person.get().ask("study " + dir + " exists (" + existing.get().trials().size()
                        + " trials): continue, restart or exit? [continue] ", "continue"))
                : OnExisting.CONTINUE);
        return new StudyStart(dir, mode, existing);
    }

    Path dir() {
        return dir;
    }

    OnExisting mode() {
        return mode;
    }

    /** True when this run adds to (or exports from) a study that exists. */
    boolean continues() {
        return mode == OnExisting.CONTINUE && existing.isPresent();
    }

    /**
     * The settings a continued study fixes, as overrides: its seed when the run gives none, and its trial count when
     * the run exports one of its trials without asking for more trials.
     *
     * @throws UserInputException when the run gives another seed
     */
    Map<String, Object> overrides(AbliterationSettings settings, boolean exportsATrial) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (!continues()) {
            return out;
        }
        long seed = existing.get().header().seed();
        if (settings.seedGenerated()) {
            out.put(Setting.SEED.key(), Long.toString(seed));
        } else if (settings.seed() != seed) {
            throw new UserInputException("study " + dir + " has seed " + seed + " and this run gives --seed " + settings.seed()
                    + "; leave --seed out to continue it, or use another --study directory or --on-existing restart");
        }
        int trials = existing.get().trials().size();
        if (exportsATrial && !settings.isGiven(Setting.N_TRIALS) && trials > 0) {
            out.put(Setting.N_TRIALS.key(), Integer.toString(trials));
        }
        return out;
    }

    /** Refuses to go on with a study whose model files or prompts are not those its cache was computed from. */
    void checkInputs(StudyCache cache, StudyCache.Inputs now) {
        if (!continues()) {
            return;
        }
        cache.storedInputs().flatMap(stored -> stored.difference(now)).ifPresent(difference -> {
            throw new UserInputException("study " + dir + " was made from " + difference + "; use what it was made from,"
                    + " another --study directory, or --on-existing restart");
        });
    }

    /** Everything besides the inputs that changes what the study cache holds: a change computes it again. */
    static Map<String, Object> computation(AbliterationSettings settings, ModelSession session) {
        Map<String, Object> key = new LinkedHashMap<>();
        key.put("crucible", Version.current());
        key.put("backend", session.backend().id());
        key.put("dtype", session.model().dtype().userName());
        key.put("quantization", settings.quantization().describe());
        key.put("threads", settings.threads());
        key.put("available_processors", Runtime.getRuntime().availableProcessors());
        key.put("batch_size", settings.batchSize());
        key.put("response_prefix", settings.responsePrefix().orElse(AbliterationSettings.AUTO));
        key.put("max_response_length", settings.maxResponseLength());
        key.put("winsorization_quantile", settings.winsorizationQuantile());
        key.put("orthogonalize", settings.orthogonalize());
        if (settings.truncatePrompts() != PromptTruncation.NONE) {
            // Absent when off, so caches made before the setting existed still count.
            key.put("truncate_prompts", settings.truncatePrompts().name().toLowerCase(Locale.ROOT));
        }
        return key;
    }
}
