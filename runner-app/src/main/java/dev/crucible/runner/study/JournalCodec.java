package dev.crucible.runner.study;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.Score;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The journal's JSON records. Written by hand on Jackson's tree model rather than by data binding, so the file
 * format is spelled out here and does not drift with a record's Java shape.
 */
final class JournalCodec {

    static final String HEADER = "header";
    static final String TRIAL = "trial";

    /** A record that does not have the expected shape; the journal adds the line number. */
    static final class FormatException extends Exception {
        FormatException(String message) {
            super(message);
        }
    }

    private final ObjectMapper mapper = new ObjectMapper();

    String line(JsonNode record) {
        try {
            return mapper.writeValueAsString(record);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write journal record", e);
        }
    }

    JsonNode parse(String line) throws FormatException {
        try {
            JsonNode node = mapper.readTree(line);
            if (node == null || !node.isObject()) {
                throw new FormatException("not a JSON object");
            }
            return node;
        } catch (JsonProcessingException e) {
            throw new FormatException("not valid JSON (" + e.getOriginalMessage() + ")");
        }
    }

    // ---- header ----

    ObjectNode header(StudyHeader header) {
        ObjectNode node = mapper.createObjectNode();
        node.put("record", HEADER);
        node.put("format_version", header.formatVersion());
        node.put("created", header.created().toString());
        node.put("seed", header.seed());
        ArrayNode objectives = node.putArray("objectives");
        for (Objective o : header.objectives()) {
            objectives.addObject().put("name", o.name()).put("direction", o.direction().name().toLowerCase(Locale.ROOT));
        }
        ObjectNode space = node.putObject("search_space");
        header.searchSpace().forEach((name, d) -> space.set(name, distribution(d)));
        node.set("settings", mapper.valueToTree(header.settings()));
        return node;
    }

    /** The format version of a header record, checked before anything else in it is read. */
    int formatVersion(JsonNode node) throws FormatException {
        if (!HEADER.equals(node.path("record").asText())) {
            throw new FormatException("the first line is not a study header");
        }
        return requiredInt(node, "format_version");
    }

    StudyHeader header(JsonNode node) throws FormatException {
        int version = formatVersion(node);
        List<Objective> objectives = new ArrayList<>();
        for (JsonNode o : required(node, "objectives")) {
            try {
                objectives.add(new Objective(requiredText(o, "name"), Optimization.parse(requiredText(o, "direction"))));
            } catch (RuntimeException e) {
                throw new FormatException("bad objective " + o + ": " + e.getMessage());
            }
        }
        Map<String, ParameterDistribution> space = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = required(node, "search_space").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            space.put(e.getKey(), distribution(e.getValue()));
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> settings = mapper.convertValue(required(node, "settings"), LinkedHashMap.class);
        try {
            return new StudyHeader(version, instant(node, "created"), requiredLong(node, "seed"), objectives, space,
                    settings);
        } catch (IllegalArgumentException e) {
            throw new FormatException(e.getMessage());
        }
    }

    /** The header as it reads back from disk, so that a fresh header compares equal to a stored one. */
    JsonNode normalized(StudyHeader header) throws FormatException {
        return parse(line(header(header)));
    }

    // ---- trials ----

    ObjectNode trial(FrozenTrial trial, List<Objective> objectives) {
        ObjectNode node = mapper.createObjectNode();
        node.put("record", TRIAL);
        node.put("number", trial.number());
        node.put("state", trial.state().name().toLowerCase(Locale.ROOT));
        ObjectNode params = node.putObject("params");
        trial.params().forEach((name, value) -> {
            switch (value) {
                case Double d -> params.put(name, d);
                case Long l -> params.put(name, l);
                case String s -> params.put(name, s);
                default -> throw new IllegalArgumentException("unexpected parameter value " + value);
            }
        });
        ObjectNode distributions = node.putObject("distributions");
        trial.distributions().forEach((name, d) -> distributions.set(name, distribution(d)));
        ObjectNode scores = node.putObject("scores");
        for (int i = 0; i < trial.scores().size(); i++) {
            Score s = trial.scores().get(i);
            ObjectNode score = scores.putObject(objectives.get(i).name());
            putNumber(score, "value", s.value());
            score.put("display", s.display());
        }
        node.put("start", trial.start().toString());
        node.put("end", trial.end().toString());
        node.put("duration_s", trial.duration().toNanos() / 1e9);
        if (trial.failure() != null) {
            node.put("failure", trial.failure());
        }
        return node;
    }

    FrozenTrial trial(JsonNode node, List<Objective> objectives) throws FormatException {
        if (!TRIAL.equals(node.path("record").asText())) {
            throw new FormatException("expected a trial record, found record '" + node.path("record").asText() + "'");
        }
        int number = requiredInt(node, "number");
        TrialState state;
        try {
            state = TrialState.valueOf(requiredText(node, "state").toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new FormatException("unknown state '" + node.path("state").asText() + "'");
        }
        Map<String, ParameterDistribution> distributions = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = required(node, "distributions").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            distributions.put(e.getKey(), distribution(e.getValue()));
        }
        Map<String, Object> params = new LinkedHashMap<>();
        JsonNode paramsNode = required(node, "params");
        for (Iterator<Map.Entry<String, JsonNode>> it = paramsNode.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            ParameterDistribution d = distributions.get(e.getKey());
            if (d == null) {
                throw new FormatException("parameter '" + e.getKey() + "' has no distribution");
            }
            params.put(e.getKey(), switch (d) {
                case ParameterDistribution.FloatRange _ when e.getValue().isNumber() -> e.getValue().doubleValue();
                case ParameterDistribution.IntRange _ when e.getValue().canConvertToLong()
                        && e.getValue().isIntegralNumber() -> e.getValue().longValue();
                case ParameterDistribution.Categorical _ when e.getValue().isTextual() -> e.getValue().textValue();
                default -> throw new FormatException("parameter '" + e.getKey() + "' value " + e.getValue()
                        + " does not fit " + d);
            });
        }
        List<Score> scores = new ArrayList<>();
        JsonNode scoresNode = required(node, "scores");
        if (state == TrialState.COMPLETE) {
            for (Objective o : objectives) {
                JsonNode s = scoresNode.get(o.name());
                if (s == null) {
                    throw new FormatException("no score for objective '" + o.name() + "'");
                }
                scores.add(new Score(number(s, "value"), requiredText(s, "display")));
            }
        }
        JsonNode failure = node.get("failure");
        try {
            return new FrozenTrial(number, state, params, distributions, scores, instant(node, "start"),
                    instant(node, "end"), failure == null || failure.isNull() ? null : failure.asText());
        } catch (IllegalArgumentException e) {
            throw new FormatException(e.getMessage());
        }
    }

    // ---- distributions ----

    ObjectNode distribution(ParameterDistribution distribution) {
        ObjectNode node = mapper.createObjectNode();
        switch (distribution) {
            case ParameterDistribution.FloatRange f ->
                    node.put("type", "float").put("low", f.low()).put("high", f.high()).put("log", f.log());
            case ParameterDistribution.IntRange r -> node.put("type", "int").put("low", r.low()).put("high", r.high());
            case ParameterDistribution.Categorical c -> {
                node.put("type", "categorical");
                ArrayNode choices = node.putArray("choices");
                c.choices().forEach(choices::add);
            }
        }
        return node;
    }

    ParameterDistribution distribution(JsonNode node) throws FormatException {
        try {
            return switch (requiredText(node, "type")) {
                case "float" -> new ParameterDistribution.FloatRange(number(node, "low"), number(node, "high"),
                        node.path("log").asBoolean(false));
                case "int" -> new ParameterDistribution.IntRange(requiredLong(node, "low"), requiredLong(node, "high"));
                case "categorical" -> {
                    List<String> choices = new ArrayList<>();
                    for (JsonNode c : required(node, "choices")) {
                        choices.add(c.asText());
                    }
                    yield new ParameterDistribution.Categorical(choices);
                }
                default -> throw new FormatException("unknown distribution type '" + node.path("type").asText() + "'");
            };
        } catch (IllegalArgumentException e) {
            throw new FormatException(e.getMessage());
        }
    }

    // ---- fields ----

    /** JSON has no Infinity or NaN: those are written as the strings Java prints for them. */
    private static void putNumber(ObjectNode node, String field, double value) {
        if (Double.isFinite(value)) {
            node.put(field, value);
        } else {
            node.put(field, Double.toString(value));
        }
    }

    private static double number(JsonNode node, String field) throws FormatException {
        JsonNode v = required(node, field);
        if (v.isNumber()) {
            return v.doubleValue();
        }
        switch (v.asText()) {
            case "Infinity" -> { return Double.POSITIVE_INFINITY; }
            case "-Infinity" -> { return Double.NEGATIVE_INFINITY; }
            case "NaN" -> { return Double.NaN; }
            default -> throw new FormatException("'" + field + "' is not a number: " + v);
        }
    }

    private static JsonNode required(JsonNode node, String field) throws FormatException {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            throw new FormatException("missing '" + field + "'");
        }
        return v;
    }

    private static String requiredText(JsonNode node, String field) throws FormatException {
        JsonNode v = required(node, field);
        if (!v.isTextual()) {
            throw new FormatException("'" + field + "' is not a string: " + v);
        }
        return v.textValue();
    }

    private static long requiredLong(JsonNode node, String field) throws FormatException {
        JsonNode v = required(node, field);
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new FormatException("'" + field + "' is not an integer: " + v);
        }
        return v.longValue();
    }

    private static int requiredInt(JsonNode node, String field) throws FormatException {
        long v = requiredLong(node, field);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new FormatException("'" + field + "' is out of range: " + v);
        }
        return (int) v;
    }

    private static Instant instant(JsonNode node, String field) throws FormatException {
        try {
            return Instant.parse(requiredText(node, field));
        } catch (DateTimeParseException e) {
            throw new FormatException("'" + field + "' is not an ISO-8601 instant: " + node.get(field));
        }
    }
}
