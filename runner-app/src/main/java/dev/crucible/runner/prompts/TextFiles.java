package dev.crucible.runner.prompts;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvParser;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;
import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** Readers for the text-based prompt formats: plain lines, JSON Lines, JSON arrays, CSV and TSV. */
final class TextFiles {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final CsvMapper CSV = CsvMapper.builder()
            .enable(CsvParser.Feature.WRAP_AS_ARRAY)
            .enable(CsvParser.Feature.SKIP_EMPTY_LINES)
            .build();

    private TextFiles() {
    }

    static List<String> readLines(Path file, Optional<String> column, String label) {
        column.ifPresent(c -> {
            throw new UserInputException("'" + label + "' is plain text (one prompt per line) and has no column '"
                    + c + "': drop ':" + c + "' or use a .jsonl, .csv or .parquet file");
        });
        List<String> prompts = new ArrayList<>();
        readText(file, label).lines().filter(line -> !line.isBlank()).forEach(prompts::add);
        return prompts;
    }

    static List<String> readJsonLines(Path file, Optional<String> column, String label) {
        List<String> prompts = new ArrayList<>();
        Optional<String> chosen = Optional.empty();
        int lineNumber = 0;
        for (Iterator<String> lines = readText(file, label).lines().iterator(); lines.hasNext(); ) {
            String line = lines.next();
            lineNumber++;
            if (line.isBlank()) {
                continue;
            }
            JsonNode row;
            try {
                row = JSON.readTree(line);
            } catch (JsonProcessingException e) {
                throw new UserInputException(label + ":" + lineNumber + ": not valid JSON (" + e.getOriginalMessage()
                        + ")");
            }
            String where = label + ":" + lineNumber;
            if (chosen.isEmpty() && row.isObject()) {
                chosen = Optional.of(Columns.choose(column, fieldNames(row), label));
            }
            value(row, column, chosen, where).ifPresent(prompts::add);
        }
        return prompts;
    }

    static List<String> readJson(Path file, Optional<String> column, String label) {
        String text = readText(file, label);
        if (!text.stripLeading().startsWith("[")) {
            // Hugging Face reads JSON Lines under a .json name too; so do we.
            return readJsonLines(file, column, label);
        }
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new UserInputException(label + ":" + line(e.getLocation()) + ": not valid JSON ("
                    + e.getOriginalMessage() + ")");
        }
        List<String> prompts = new ArrayList<>();
        Optional<String> chosen = Optional.empty();
        for (int index = 0; index < root.size(); index++) {
            JsonNode row = root.get(index);
            if (chosen.isEmpty() && row.isObject()) {
                chosen = Optional.of(Columns.choose(column, fieldNames(row), label));
            }
            value(row, column, chosen, label + " element " + index).ifPresent(prompts::add);
        }
        return prompts;
    }

    /** One row's prompt: a bare string, or the chosen field of an object; null, missing and blank give none. */
    private static Optional<String> value(JsonNode row, Optional<String> requested, Optional<String> chosen,
                                          String where) {
        JsonNode cell;
        String what;
        if (row.isTextual() && requested.isEmpty()) {
            cell = row;
            what = "the value";
        } else if (row.isObject() && chosen.isPresent()) {
            cell = row.get(chosen.get());
            what = "column '" + Columns.printable(chosen.get()) + "'";
        } else {
            throw new UserInputException(where + ": expected " + (requested.isPresent() ? "an object with '"
                    + requested.get() + "'" : "an object or a string") + ", got " + kind(row));
        }
        if (cell == null || cell.isNull()) {
            return Optional.empty();
        }
        if (!cell.isTextual()) {
            throw new UserInputException(where + ": " + what + " holds " + kind(cell) + ", not text");
        }
        return cell.asText().isBlank() ? Optional.empty() : Optional.of(cell.asText());
    }

    private static Set<String> fieldNames(JsonNode object) {
        Set<String> names = new LinkedHashSet<>();
        object.fieldNames().forEachRemaining(names::add);
        return names;
    }

    private static String kind(JsonNode node) {
        return switch (node.getNodeType()) {
            case ARRAY -> "a list";
            case OBJECT -> "an object";
            case NUMBER -> "a number";
            case BOOLEAN -> "a boolean";
            case STRING -> "a string";
            default -> node.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
        };
    }

    static List<String> readDelimited(Path file, char separator, Optional<String> column, String label) {
        String text = readText(file, label);
        CsvSchema schema = CsvSchema.emptySchema().withColumnSeparator(separator);
        List<String> prompts = new ArrayList<>();
        try (MappingIterator<List<String>> rows = CSV.readerForListOf(String.class).with(schema).readValues(text)) {
            if (!rows.hasNextValue()) {
                return prompts;
            }
            List<String> header = rows.nextValue().stream().map(String::strip).toList();
            int index = header.indexOf(Columns.choose(column, new LinkedHashSet<>(header), label));
            while (rows.hasNextValue()) {
                List<String> row = rows.nextValue();
                if (index < row.size() && !row.get(index).isBlank()) {
                    prompts.add(row.get(index));
                }
            }
        } catch (JsonProcessingException e) {
            throw new UserInputException(label + ":" + line(e.getLocation()) + ": not valid "
                    + (separator == ',' ? "CSV" : "TSV") + " (" + e.getOriginalMessage() + ")");
        } catch (IOException e) {
            throw new UserInputException("cannot read '" + label + "': " + e.getMessage(), e);
        }
        return prompts;
    }

    private static String line(JsonLocation location) {
        return location == null ? "?" : Integer.toString(location.getLineNr());
    }

    /** The whole file as UTF-8, without a byte order mark (spreadsheet exports start with one). */
    static String readText(Path file, String label) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (CharacterCodingException e) {
            throw new UserInputException("'" + label + "' is not UTF-8 text; save it as UTF-8", e);
        } catch (IOException e) {
            throw new UserInputException("cannot read '" + label + "': " + e.getMessage(), e);
        }
        return text.startsWith("\uFEFF") ? text.substring(1) : text;
    }
}
