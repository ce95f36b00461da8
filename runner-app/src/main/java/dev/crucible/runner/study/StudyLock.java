package dev.crucible.runner.study;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.io.WriteFailure;
import java.io.Closeable;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The exclusive right to one study folder, taken before a run does anything expensive: a second run on the same
 * study, or a study in a folder that cannot be written, stops at once with one line instead of after the model
 * has loaded. The lock is an OS file lock on {@code DIR/.lock}, so it goes away with the process however the process
 * ends; the file itself stays (deleting lock files races with the next run taking them).
 */
public final class StudyLock implements Closeable {
    static final String FILE_NAME = ".lock";

    private final Path directory;
    private final FileChannel channel;
    private final FileLock lock;

    private StudyLock(Path directory, FileChannel channel, FileLock lock) {
        this.directory = directory;
        this.channel = channel;
        this.lock = lock;
    }

    /** Creates the study folder if needed and locks it; refused when another run holds it or the folder cannot be written. */
    public static StudyLock acquire(Path directory) {
        OutputLocation.createFolder(directory);
        FileChannel channel;
        try {
            channel = FileChannel.open(directory.resolve(FILE_NAME), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw WriteFailure.of(directory, e);
        }
        try {
            FileLock lock = channel.tryLock();
            if (lock == null) {
                throw inUse(directory);
            }
            return new StudyLock(directory, channel, lock);
        } catch (OverlappingFileLockException e) {
            // This process holds it already (a second study on one folder in one JVM, as in tests).
            closeQuietly(channel);
            throw inUse(directory);
        } catch (IOException | RuntimeException e) {
            closeQuietly(channel);
            throw e instanceof IOException io ? WriteFailure.of(directory, io) : (RuntimeException) e;
        }
    }

    private static UserInputException inUse(Path directory) {
        return new UserInputException("study " + directory + " is in use by another run; wait for it to finish"
                + " or use another --study directory");
    }

    public Path directory() {
        return directory;
    }

    @Override
    public void close() throws IOException {
        if (channel.isOpen()) {
            lock.release();
            channel.close();
        }
    }

    private static void closeQuietly(FileChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // the lock failure is what gets reported
        }
    }
}
