package dev.crucible.runner.prompts.parquet;

import java.io.IOException;

/** The file is not Parquet, is damaged, or uses a feature this reader does not support; the message says which. */
public final class ParquetException extends IOException {
    public ParquetException(String message) {
        super(message);
    }

    public ParquetException(String message, Throwable cause) {
        super(message, cause);
    }
}
