package dev.crucible.accelerator.xla.exec;

import dev.crucible.api.UserInputException;

/**
 * A program or an upload did not fit in device memory. The user can act on it (a smaller batch, more devices), so
 * it is one line; the backend first halves the batch and tries again.
 */
public final class OutOfDeviceMemoryException extends UserInputException {
    public OutOfDeviceMemoryException(String message, Throwable cause) {
        super(message, cause);
    }
}
