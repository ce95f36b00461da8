package dev.crucible.runner.study;

import dev.crucible.runner.abliterate.SearchSpace;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * A two-objective minimization problem the sampler comparison runs both samplers on: the parameters (drawn in
 * this order, define-by-run), the losses of a point, and the hypervolume reference point. {@code shaping} turns the
 * losses into what the sampler is told (the identity, or e.g. the reference tool's KL target); the hypervolume is
 * always taken of the losses themselves.
 */
record SearchProblem(String name, Map<String, ParameterDistribution> space, double[] reference,
                     Function<Map<String, Object>, double[]> objective, UnaryOperator<double[]> shaping) {

    SearchProblem(String name, Map<String, ParameterDistribution> space, double[] reference,
                  Function<Map<String, Object>, double[]> objective) {
        this(name, space, reference, objective, UnaryOperator.identity());
    }

    /** The same problem, the sampler being told {@code told(losses)}. */
    SearchProblem shaped(String suffix, UnaryOperator<double[]> told) {
        return new SearchProblem(name + suffix, space, reference, objective, told);
    }

    /** The abliteration's parameter space on a 4-layer model (the demo model's): 1 categorical and 9 floats. */
    static final Map<String, ParameterDistribution> ABLITERATION_SPACE = new SearchSpace(4).distributions();

    /** ZDT's box covers what both samplers reach from the first trial on (f1 in [0, 1], f2 up to ~10). */
    private static final double[] ZDT_REFERENCE = {1.1, 11.0};

    double[] evaluate(Map<String, Object> params) {
        return objective.apply(params);
    }

    /** ZDT1, 2 or 3 on 10 floats in [0, 1]: the abliteration's dimension, every parameter continuous. */
    static SearchProblem zdtContinuous(int which) {
        Map<String, ParameterDistribution> space = new LinkedHashMap<>();
        for (int i = 0; i < ABLITERATION_SPACE.size(); i++) {
            space.put("x" + i, new ParameterDistribution.FloatRange(0, 1, false));
        }
        return new SearchProblem("ZDT" + which + " continuous", space, ZDT_REFERENCE, p -> zdt(which, unitCube(space, p)));
    }

    /**
     * ZDT1, 2 or 3 on the abliteration's own space: each parameter mapped linearly onto [0, 1] (the categorical
     * direction scope onto {0, 1}, a step in g), direction_index being ZDT's x1, the others g's variables.
     */
    static SearchProblem zdtOnAbliterationSpace(int which) {
        List<String> names = List.copyOf(ABLITERATION_SPACE.keySet());
        return new SearchProblem("ZDT" + which + " abliteration space", ABLITERATION_SPACE, ZDT_REFERENCE, p -> {
            double[] unit = unitCube(ABLITERATION_SPACE, p);
            // direction_index (position 1) first: x1 must be continuous, it is f1.
            int first = names.indexOf("direction_index");
            double[] x = new double[unit.length];
            x[0] = unit[first];
            for (int i = 0, k = 1; i < unit.length; i++) {
                if (i != first) {
                    x[k++] = unit[i];
                }
            }
            return zdt(which, x);
        });
    }

    /**
     * The demo-model abliteration replayed from its cache of real evaluations ({@link DemoReplay}): losses are
     * (refusals / 100, KL divergence), the reference point (1.0, 0.2) the issue's.
     */
    static SearchProblem demoReplay(Path csv) {
        DemoReplay replay = DemoReplay.of(DemoReplay.readRows(csv, ABLITERATION_SPACE), ABLITERATION_SPACE);
        return new SearchProblem("demo-model abliteration (replay)", ABLITERATION_SPACE, new double[] {1.0, 0.2}, replay::evaluate);
    }

    /**
     * What the reference tool tells its sampler instead of (refusal rate, KL): refusals relative to the base model's,
     * and below a KL target the KL objective replaced by that relative refusal count times the target, so that edits
     * which barely change the model (tiny KL, nearly all refusals) stop looking like a front of their own.
     */
    static UnaryOperator<double[]> klTarget(double baseRefusalRate, double target) {
        return losses -> {
            double refusals = losses[0] / baseRefusalRate;
            return new double[] {refusals, losses[1] >= target ? losses[1] : refusals * target};
        };
    }

    /** Each parameter's position in its range, in [0, 1]; a categorical choice's index over (choices - 1). */
    static double[] unitCube(Map<String, ParameterDistribution> space, Map<String, Object> params) {
        double[] x = new double[space.size()];
        int j = 0;
        for (Map.Entry<String, ParameterDistribution> e : space.entrySet()) {
            double internal = e.getValue().toInternal(params.get(e.getKey()));
            x[j++] = switch (e.getValue()) {
                case ParameterDistribution.FloatRange f -> (internal - f.low()) / (f.high() - f.low());
                case ParameterDistribution.IntRange r -> (internal - r.low()) / (double) (r.high() - r.low());
                case ParameterDistribution.Categorical c -> internal / (c.choices().size() - 1);
            };
        }
        return x;
    }

    /** Zitzler, Deb and Thiele's test problems: f1 = x1, f2 = g h(f1, g), g = 1 + 9 mean(x2..xn). */
    static double[] zdt(int which, double[] x) {
        double sum = 0;
        for (int i = 1; i < x.length; i++) {
            sum += x[i];
        }
        double f1 = x[0];
        double g = 1 + 9 * sum / (x.length - 1);
        double h = switch (which) {
            case 1 -> 1 - Math.sqrt(f1 / g);
            case 2 -> 1 - (f1 / g) * (f1 / g);
            case 3 -> 1 - Math.sqrt(f1 / g) - (f1 / g) * Math.sin(10 * Math.PI * f1);
            default -> throw new IllegalArgumentException("ZDT" + which + " is not one of ZDT1-3");
        };
        return new double[] {f1, g * h};
    }
}
