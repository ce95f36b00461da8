package dev.crucible.runner.cli;

import java.util.ArrayList;
import java.util.List;

/** What a terminal shows for some output: a carriage return goes back to the start of the line and overwrites it. */
final class Screen {
    private Screen() {
    }

    /** The lines shown, trailing blanks stripped; a last line without a line break counts too. */
    static List<String> of(String output) {
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        int column = 0;
        for (char c : output.toCharArray()) {
            switch (c) {
                case '\r' -> column = 0;
                case '\n' -> {
                    lines.add(line.toString().stripTrailing());
                    line.setLength(0);
                    column = 0;
                }
                default -> {
                    if (column < line.length()) {
                        line.setCharAt(column, c);
                    } else {
                        line.append(c);
                    }
                    column++;
                }
            }
        }
        if (!line.isEmpty()) {
            lines.add(line.toString().stripTrailing());
        }
        return lines;
    }
}
