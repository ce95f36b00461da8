package dev.crucible.runner.prompts;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.prompts.parquet.ParquetException;
import dev.crucible.runner.prompts.parquet.ParquetFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Reads one top-level string column of a Parquet file as prompts; file damage becomes one line naming the file. */
final class ParquetColumn {

    private ParquetColumn() {
    }

    /** The non-blank values of the column, at most {@code limit} of them. */
    static List<String> read(Path file, Optional<String> column, String label, int limit) {
        try (ParquetFile parquet = ParquetFile.open(file)) {
            Map<String, ParquetFile.Field> fields = new LinkedHashMap<>();
            parquet.fields().forEach(field -> fields.putIfAbsent(field.name(), field));
            ParquetFile.Field field = fields.get(Columns.choose(column, fields.keySet(), label));
            if (!field.readable()) {
                throw new UserInputException("column '" + Columns.printable(field.name()) + "' of '" + label + "' holds " + field.kind()
                        + ", not text: choose a string column");
            }
            List<String> prompts = new ArrayList<>();
            long[] row = {0};
            parquet.read(field, value -> {
                row[0]++;
                if (value != null && !value.isBlank()) {
                    prompts.add(TextFiles.bounded(value, "'" + label + "' row " + row[0]));
                }
                return prompts.size() < limit;
            });
            return prompts;
        } catch (ParquetException e) {
            throw new UserInputException("cannot read parquet file '" + label + "': " + e.getMessage(), e);
        } catch (IOException e) {
            throw new UserInputException("cannot read '" + label + "': " + e.getMessage(), e);
        }
    }
}
