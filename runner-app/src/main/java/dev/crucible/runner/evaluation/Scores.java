package dev.crucible.runner.evaluation;

import dev.crucible.api.scoring.Score;
import dev.crucible.runner.study.Objective;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Scores as JSON reports and reproduce.json give them: by objective name, the value, its display and direction. */
public final class Scores {
    private Scores() {
    }

    public static Map<String, Object> json(List<Objective> objectives, List<Score> scores) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (int i = 0; i < objectives.size(); i++) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("value", scores.get(i).value());
            s.put("display", scores.get(i).display());
            s.put("optimization", objectives.get(i).direction().name().toLowerCase(Locale.ROOT));
            out.put(objectives.get(i).name(), s);
        }
        return out;
    }
}
