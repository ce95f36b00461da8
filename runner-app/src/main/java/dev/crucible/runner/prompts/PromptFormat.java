package dev.crucible.runner.prompts;

import dev.crucible.api.UserInputException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** The file formats a prompt set can be read from, told apart by file extension. */
public enum PromptFormat {
    /** One prompt per line; blank lines are skipped. */
    TEXT,
    /** One JSON object (or string) per line. */
    JSONL,
    /** A JSON array of objects or strings (or, as Hugging Face accepts, JSON Lines under a .json name). */
    JSON,
    /** RFC 4180 comma-separated values with a header row. */
    CSV,
    /** Tab-separated values with a header row, quoted like CSV. */
    TSV,
    /** Apache Parquet, the format of Hugging Face datasets. */
    PARQUET;

    /** Preference when a dataset folder holds one split in several formats. */
    static final List<PromptFormat> DATASET_PREFERENCE = List.of(PARQUET, JSONL, JSON, CSV, TSV, TEXT);

    /** The format of {@code file}, or empty when its extension is none of ours. */
    public static Optional<PromptFormat> of(Path file) {
        String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
        int dot = name.lastIndexOf('.');
        if (dot <= 0) {
            return Optional.of(TEXT);
        }
        return switch (name.substring(dot + 1)) {
            case "txt" -> Optional.of(TEXT);
            case "jsonl", "ndjson" -> Optional.of(JSONL);
            case "json" -> Optional.of(JSON);
            case "csv" -> Optional.of(CSV);
            case "tsv" -> Optional.of(TSV);
            case "parquet" -> Optional.of(PARQUET);
            default -> Optional.empty();
        };
    }

    static PromptFormat require(Path file, String label) {
        return of(file).orElseThrow(() -> new UserInputException("cannot tell the format of prompt file '" + label
                + "': use .txt (one prompt per line), .jsonl, .json, .csv, .tsv or .parquet"));
    }

    /**
     * The non-blank values of {@code column} (or of the lines, for text) in file order. {@code limit} lets formats
     * that can stop early (all but a JSON array) read only the first prompts a slice needs; others may return more.
     */
    List<String> read(Path file, Optional<String> column, String label, int limit) {
        return switch (this) {
            case TEXT -> TextFiles.readLines(file, column, label, limit);
            case JSONL -> TextFiles.readJsonLines(file, column, label, limit);
            case JSON -> TextFiles.readJson(file, column, label, limit);
            case CSV -> TextFiles.readDelimited(file, ',', column, label, limit);
            case TSV -> TextFiles.readDelimited(file, '\t', column, label, limit);
            case PARQUET -> ParquetColumn.read(file, column, label, limit);
        };
    }
}
