package dev.crucible.runner.study;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Optuna 5.0's {@code TPESampler(multivariate=True, n_startup_trials, n_ei_candidates)} driven over a pipe
 * ({@code scripts/optuna-ask-tell.py} in the oracle venv): Optuna proposes, this side evaluates, so both samplers are
 * measured on one implementation of each objective. One Python process serves any number of studies in turn.
 */
final class OptunaTpe implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Process process;
    private final BufferedReader in;
    private final BufferedWriter out;

    OptunaTpe(Path python, Path repositoryRoot) {
        try {
            process = new ProcessBuilder(python.toString(), repositoryRoot.resolve("scripts/optuna-ask-tell.py").toString())
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        out = new BufferedWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
    }

    /** Runs one study of {@code trials} trials; returns every trial's losses in trial order. */
    List<double[]> run(SearchProblem problem, long seed, int trials, int startupTrials, int candidates) {
        ObjectNode spec = JSON.createObjectNode();
        spec.put("seed", seed).put("trials", trials).put("startup", startupTrials).put("candidates", candidates);
        ArrayNode directions = spec.putArray("directions");
        for (int i = 0; i < problem.reference().length; i++) {
            directions.add("minimize");
        }
        ArrayNode space = spec.putArray("space");
        problem.space().forEach((name, distribution) -> {
            ObjectNode p = space.addObject().put("name", name);
            switch (distribution) {
                case ParameterDistribution.FloatRange f -> {
                    if (f.log()) {
                        throw new IllegalArgumentException("the bridge has no log floats: " + name);
                    }
                    p.put("type", "float").put("low", f.low()).put("high", f.high());
                }
                case ParameterDistribution.IntRange r -> p.put("type", "int").put("low", r.low()).put("high", r.high());
                case ParameterDistribution.Categorical c -> c.choices().forEach(p.put("type", "categorical").putArray("choices")::add);
            }
        });
        send(spec);
        List<double[]> losses = new ArrayList<>();
        for (int t = 0; t < trials; t++) {
            JsonNode params = receive().get("params");
            Map<String, Object> values = new LinkedHashMap<>();
            problem.space().forEach((name, distribution) -> {
                JsonNode v = params.get(name);
                values.put(name, switch (distribution) {
                    case ParameterDistribution.FloatRange f -> v.doubleValue();
                    case ParameterDistribution.IntRange r -> v.longValue();
                    case ParameterDistribution.Categorical c -> v.textValue();
                });
            });
            double[] loss = problem.evaluate(values);
            losses.add(loss);
            ObjectNode tell = JSON.createObjectNode();
            ArrayNode array = tell.putArray("values");
            for (double l : problem.shaping().apply(loss)) {
                array.add(l);
            }
            send(tell);
        }
        if (!receive().path("done").asBoolean()) {
            throw new IllegalStateException("Optuna did not finish the study after " + trials + " trials");
        }
        return losses;
    }

    private void send(JsonNode node) {
        try {
            out.write(JSON.writeValueAsString(node));
            out.newLine();
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("the Optuna process stopped reading", e);
        }
    }

    private JsonNode receive() {
        try {
            String line = in.readLine();
            if (line == null) {
                throw new IllegalStateException("the Optuna process ended (exit " + process.waitFor() + "); see stderr");
            }
            return JSON.readTree(line);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        try {
            out.close();
            process.waitFor();
        } catch (IOException e) {
            process.destroy();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroy();
        }
    }
}
