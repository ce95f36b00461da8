package dev.crucible.runner.cli;

import com.github.freva.asciitable.AsciiTable;
import com.github.freva.asciitable.Column;
import com.github.freva.asciitable.HorizontalAlign;
import dev.crucible.runner.abliterate.AblationParameters;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** What a finished abliteration run shows: the Pareto front once, as a table, and the trial to take. */
final class FrontReport {
    /** How to read a trial's parameters, shown once per run before the first line that uses the notation. */
    static final String NOTATION = "Parameters: global = one refusal direction for all layers, per_layer = each layer its own;"
            + " dir = its layer index (fractions interpolate);" + System.lineSeparator()
            + "attn(...), mlp(...) = the edit of o_proj, down_proj: weight max at layer @, falling to min at dist layers away, none beyond.";

    private FrontReport() {
    }

    /** The front as a table, fewest refusals (the first objective) first. */
    static void printFront(PrintWriter log, List<FrozenTrial> front, List<Objective> objectives) {
        log.println();
        log.println("Pareto front (" + front.size() + " trials):");
        List<FrozenTrial> rows = front.stream()
                .sorted(Comparator.<FrozenTrial>comparingDouble(t -> t.scores().getFirst().value()).thenComparingInt(FrozenTrial::number))
                .toList();
        List<Column> columns = new ArrayList<>();
        columns.add(new Column().header("trial").dataAlign(HorizontalAlign.RIGHT));
        for (Objective o : objectives) {
            columns.add(new Column().header(AbliterateCommand.label(o.name())).dataAlign(HorizontalAlign.RIGHT));
        }
        // Wide enough for the longest parameter string, so no row wraps.
        columns.add(new Column().header("parameters").dataAlign(HorizontalAlign.LEFT).maxWidth(110));
        String[][] data = new String[rows.size()][];
        for (int r = 0; r < rows.size(); r++) {
            FrozenTrial t = rows.get(r);
            List<String> cells = new ArrayList<>();
            cells.add(Integer.toString(t.number()));
            t.scores().forEach(s -> cells.add(s.display()));
            cells.add(AblationParameters.fromTrial(t.params()).toString());
            data[r] = cells.toArray(String[]::new);
        }
        log.println(AsciiTable.getTable(AsciiTable.BASIC_ASCII_NO_DATA_SEPARATORS, columns.toArray(Column[]::new), data));
    }

    /**
     * The recommended trial and, when given, the command that exports it; or why there is none.
     *
     * @param exportCommand the exact command line, absent when this run exports already
     */
    static void printRecommendation(PrintWriter log, Optional<FrozenTrial> recommended, List<Objective> objectives, double maxKl,
                                    Optional<String> exportCommand) {
        String limit = String.format(Locale.ROOT, "%s", maxKl);
        if (recommended.isEmpty()) {
            log.println("No trial on the front has a KL divergence of at most " + limit
                    + ": raise --max-kl for a recommendation, or choose one with --trial N.");
            return;
        }
        FrozenTrial t = recommended.get();
        log.println("Recommended: trial " + t.number() + " (" + AbliterateCommand.describe(objectives, t.scores())
                + "), the fewest refusals on the front with a KL divergence of at most " + limit + " (--max-kl; --trial best picks it).");
        exportCommand.ifPresent(command -> {
            log.println("Export it:   " + command);
            log.println("             (--export-adapter DIR instead of --export DIR writes a PEFT adapter)");
        });
    }
}
