package dev.crucible.runner.prompts;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.dataformat.csv.CsvFactory;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvParser;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;
import dev.crucible.api.UserInputException;
import dev.crucible.runner.text.BoundedLineReader;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Readers for the text-based prompt formats: plain lines, JSON Lines, JSON arrays, CSV and TSV. Files are streamed,
 * never read whole into one string, and bounded: a prompt is at most {@link BoundedLineReader#PROMPT_CHARS}
 * characters and any other value or JSON Lines row at most {@link BoundedLineReader#ROW_CHARS}, so a huge line
 * fails at once with its place instead of filling the memory and stalling the tokenizer. Line-based formats stop
 * reading once they hold the prompts a slice needs.
 */
final class TextFiles {

    /** Strings longer than a row cannot be a prompt or sit beside one; the parsers stop at them. */
    private static final StreamReadConstraints BOUNDED = StreamReadConstraints.builder()
            .maxStringLength(BoundedLineReader.ROW_CHARS).build();
    private static final ObjectMapper JSON = JsonMapper.builder(JsonFactory.builder()
            .streamReadConstraints(BOUNDED).build()).build();
    private static final CsvMapper CSV = CsvMapper.builder(CsvFactory.builder().streamReadConstraints(BOUNDED).build())
            .enable(CsvParser.Feature.WRAP_AS_ARRAY)
            .enable(CsvParser.Feature.SKIP_EMPTY_LINES)
            .build();

    private TextFiles() {
    }

    /** The non-blank lines of a plain text file, at most {@code limit} of them. */
    static List<String> readLines(Path file, Optional<String> column, String label, int limit) {
        column.ifPresent(c -> {
            throw new UserInputException("'" + label + "' is plain text (one prompt per line) and has no column '"
                    + c + "': drop ':" + c + "' or use a .jsonl, .csv or .parquet file");
        });
        try {
            return readLines(BoundedLineReader.open(file, BoundedLineReader.PROMPT_CHARS), label, limit);
        } catch (IOException e) {
            throw readFailure(label, e);
        }
    }

    /** The non-blank lines {@code lines} holds, at most {@code limit} of them; closes {@code lines}. */
    static List<String> readLines(BoundedLineReader lines, String label, int limit) {
        List<String> prompts = new ArrayList<>();
        try (lines) {
            String line;
            while (prompts.size() < limit && (line = lines.readLine()) != null) {
                if (!line.isBlank()) {
                    prompts.add(line);
                }
            }
        } catch (IOException e) {
            throw readFailure(label, e);
        }
        return prompts;
    }

    static List<String> readJsonLines(Path file, Optional<String> column, String label, int limit) {
        try (BoundedLineReader lines = BoundedLineReader.open(file, BoundedLineReader.ROW_CHARS)) {
            return readJsonLines(lines, column, label, limit);
        } catch (IOException e) {
            throw readFailure(label, e);
        }
    }

    private static List<String> readJsonLines(BoundedLineReader lines, Optional<String> column, String label,
                                              int limit) throws IOException {
        List<String> prompts = new ArrayList<>();
        Optional<String> chosen = Optional.empty();
        String line;
        while (prompts.size() < limit && (line = lines.readLine()) != null) {
            long lineNumber = lines.lineNumber();
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

    static List<String> readJson(Path file, Optional<String> column, String label, int limit) {
        JsonNode root;
        try (BufferedReader in = utf8(file)) {
            if (!startsWithArray(in)) {
                // Hugging Face reads JSON Lines under a .json name too; so do we.
                return readJsonLines(file, column, label, limit);
            }
            root = JSON.readTree(in);
        } catch (StreamConstraintsException e) {
            throw new UserInputException("'" + label + "' holds a string longer than "
                    + count(BoundedLineReader.ROW_CHARS) + " characters; a prompt is at most "
                    + count(BoundedLineReader.PROMPT_CHARS));
        } catch (JsonProcessingException e) {
            throw new UserInputException(label + ":" + line(e.getLocation()) + ": not valid JSON ("
                    + e.getOriginalMessage() + ")");
        } catch (IOException e) {
            throw readFailure(label, e);
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
        return cell.asText().isBlank() ? Optional.empty() : Optional.of(bounded(cell.asText(), where));
    }

    /**
     * {@code prompt} when it is at most {@link BoundedLineReader#PROMPT_CHARS} long.
     *
     * @throws UserInputException naming {@code where} otherwise
     */
    static String bounded(String prompt, String where) {
        if (prompt.length() > BoundedLineReader.PROMPT_CHARS) {
            throw new UserInputException(where + ": the prompt is " + count(prompt.length())
                    + " characters, more than the " + count(BoundedLineReader.PROMPT_CHARS) + " a prompt may have");
        }
        return prompt;
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

    static List<String> readDelimited(Path file, char separator, Optional<String> column, String label, int limit) {
        CsvSchema schema = CsvSchema.emptySchema().withColumnSeparator(separator);
        List<String> prompts = new ArrayList<>();
        try (Reader in = utf8(file);
             MappingIterator<List<String>> rows = CSV.readerForListOf(String.class).with(schema).readValues(in)) {
            if (!rows.hasNextValue()) {
                return prompts;
            }
            List<String> header = rows.nextValue().stream().map(String::strip).toList();
            int index = header.indexOf(Columns.choose(column, new LinkedHashSet<>(header), label));
            for (long number = 1; prompts.size() < limit && rows.hasNextValue(); number++) {
                List<String> row = rows.nextValue();
                if (index < row.size() && !row.get(index).isBlank()) {
                    prompts.add(bounded(row.get(index), "'" + label + "' row " + number));
                }
            }
        } catch (JsonProcessingException e) {
            if (tooLong(e)) {
                throw new UserInputException(label + ":" + line(e.getLocation()) + ": a value longer than "
                        + count(BoundedLineReader.ROW_CHARS) + " characters; a prompt is at most "
                        + count(BoundedLineReader.PROMPT_CHARS));
            }
            throw new UserInputException(label + ":" + line(e.getLocation()) + ": not valid "
                    + (separator == ',' ? "CSV" : "TSV") + " (" + e.getOriginalMessage() + ")");
        } catch (IOException e) {
            throw readFailure(label, e);
        }
        return prompts;
    }

    /** Databind wraps the parser's limit in a mapping exception; the cause says what it was. */
    private static boolean tooLong(Throwable e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof StreamConstraintsException) {
                return true;
            }
        }
        return false;
    }

    private static String line(JsonLocation location) {
        return location == null ? "?" : Integer.toString(location.getLineNr());
    }

    /** A UTF-8 reader that fails on bytes that are not UTF-8 and skips a byte order mark. */
    private static BufferedReader utf8(Path file) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(Files.newInputStream(file),
                StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)));
        in.mark(1);
        if (in.read() != '\uFEFF') {
            in.reset();
        }
        return in;
    }

    /** Whether the first character after leading white space is {@code [}; the reader is left just before it. */
    private static boolean startsWithArray(BufferedReader in) throws IOException {
        while (true) {
            in.mark(1);
            int c = in.read();
            if (c < 0 || !Character.isWhitespace(c)) {
                in.reset();
                return c == '[';
            }
        }
    }

    private static UserInputException readFailure(String label, IOException e) {
        if (e instanceof BoundedLineReader.LineTooLongException tooLong) {
            return new UserInputException(label + ":" + tooLong.line() + ": the line is longer than "
                    + count(tooLong.maxChars()) + " characters, " + (tooLong.maxChars() == BoundedLineReader.PROMPT_CHARS
                    ? "the most a prompt may have (one prompt per line)" : "the most a JSON Lines row may have"));
        }
        if (e instanceof CharacterCodingException) {
            return new UserInputException("'" + label + "' is not UTF-8 text; save it as UTF-8", e);
        }
        return new UserInputException("cannot read '" + label + "': " + e.getMessage(), e);
    }

    static String count(long n) {
        return String.format(java.util.Locale.ROOT, "%,d", n);
    }
}
