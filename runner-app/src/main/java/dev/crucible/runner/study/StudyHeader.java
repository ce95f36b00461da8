package dev.crucible.runner.study;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The first line of a study journal: what the study is. Everything except {@code created} and
 * {@code formatVersion} must match for a later run to continue the study.
 *
 * @param formatVersion the journal format this header was written in
 * @param created       when the study was started
 * @param seed          the study seed; trial n's randomness derives from (seed, n)
 * @param objectives    the scores, in order, and their directions
 * @param searchSpace   a description of the parameters the experiment draws (for people and for the identity
 *                      check; the journal records each trial's actual distributions as well)
 * @param settings      everything else that must not change within a study: model, prompt sets, sampler
 *                      settings. JSON-compatible values (strings, numbers, booleans, lists, maps). Leave out what
 *                      may change between runs, such as the number of trials to run.
 */
public record StudyHeader(int formatVersion, Instant created, long seed, List<Objective> objectives,
                          Map<String, ParameterDistribution> searchSpace, Map<String, Object> settings) {

    /** The format this code writes; it reads this version and older ones. */
    public static final int FORMAT_VERSION = 1;

    public StudyHeader {
        Objects.requireNonNull(created, "created is null");
        objectives = List.copyOf(Objects.requireNonNull(objectives, "objectives is null"));
        searchSpace = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(searchSpace,
                "searchSpace is null")));
        settings = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(settings,
                "settings is null")));
        if (objectives.isEmpty()) {
            throw new IllegalArgumentException("a study needs at least one objective");
        }
    }

    /** A header for a new study in the current format. */
    public static StudyHeader of(long seed, List<Objective> objectives, Map<String, ParameterDistribution> searchSpace,
                                 Map<String, Object> settings) {
        return new StudyHeader(FORMAT_VERSION, Instant.now(), seed, objectives, searchSpace, settings);
    }
}
