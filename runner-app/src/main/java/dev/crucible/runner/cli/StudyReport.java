package dev.crucible.runner.cli;

import dev.crucible.api.scoring.Score;
import dev.crucible.runner.abliterate.config.AbliterationSettings;
import dev.crucible.runner.evaluation.Scores;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The object {@code runner abliterate --json} prints at the end. */
final class StudyReport {
    private StudyReport() {
    }

    static Map<String, Object> of(List<Objective> objectives, List<Score> baselines, List<FrozenTrial> trials,
                                  List<FrozenTrial> front, Optional<FrozenTrial> chosen, AbliterationSettings settings) {
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("seed", settings.seed());
        report.put("base", Scores.json(objectives, baselines));
        List<Map<String, Object>> all = new ArrayList<>();
        trials.forEach(t -> all.add(trial(t, objectives)));
        report.put("trials", all);
        report.put("front", front.stream().map(FrozenTrial::number).sorted().toList());
        report.put("chosen", chosen.map(t -> trial(t, objectives)).orElse(null));
        return report;
    }

    private static Map<String, Object> trial(FrozenTrial t, List<Objective> objectives) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("number", t.number());
        o.put("parameters", t.params());
        o.put("scores", Scores.json(objectives, t.scores()));
        o.put("seconds", t.duration().toMillis() / 1000.0);
        return o;
    }
}
