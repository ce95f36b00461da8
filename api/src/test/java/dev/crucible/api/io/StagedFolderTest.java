package dev.crucible.api.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Output folders under faults: the write failures here are simulated (an IOException with the text the JDK gives for
 * ENOSPC, thrown where a write would fail) so that they run anywhere; the runner's tests repeat them on real small
 * and read-only file systems where the machine lets them mount one.
 */
class StagedFolderTest {
    @TempDir
    Path temp;

    @Test
    void folderGetsTheUmaskPermissionsLikeMkdir() throws IOException {
        Path reference = Files.createDirectory(temp.resolve("made-by-mkdir"));
        Path out = temp.resolve("out");
        StagedFolder.write(out, false, 0, folder -> Files.writeString(folder.resolve("a.txt"), "a"));
        assertEquals(PosixFilePermissions.toString(Files.getPosixFilePermissions(reference)),
                PosixFilePermissions.toString(Files.getPosixFilePermissions(out)),
                "createTempDirectory would have made it rwx------");
    }

    @Test
    void aDiskThatFillsUpIsOneLineNamingTheFolderAndItsSizeAndKeepsTheOldFolder() throws IOException {
        Path out = Files.createDirectories(temp.resolve("export"));
        Files.writeString(out.resolve("keep.txt"), "the previous export");
        WriteFailure failure = assertThrows(WriteFailure.class, () -> StagedFolder.write(out, true, 3_400_000, folder -> {
            Files.writeString(folder.resolve("config.json"), "{}");
            // What FileChannel.write throws when write(2) fails with ENOSPC: no path, only the OS's text.
            throw new IOException("No space left on device");
        }));
        String message = failure.getMessage();
        // The free space it names is this disk's (plenty, here: then it says that inodes or quota ran out).
        assertTrue(message.startsWith("cannot write " + out + ": no space left on device; it needs 3.4 MB"), message);
        assertTrue(message.endsWith(" free, so the file system is out of inodes or quota; free some space or choose another folder")
                || message.endsWith(" free; free some space or choose another folder"), message);
        assertEquals(1, message.lines().count());
        assertEquals("the previous export", Files.readString(out.resolve("keep.txt")), "the old folder is intact");
        assertEquals(List.of(out), siblings(), "the partial folder is removed");
    }

    @Test
    void aFailureOnOneFileNamesItUnderTheTargetNotUnderTheHiddenStagingFolder() throws IOException {
        Path out = temp.resolve("merged");
        WriteFailure failure = assertThrows(WriteFailure.class, () -> StagedFolder.write(out, false, 0, folder -> {
            throw new FileSystemException(folder.resolve("model.safetensors").toString(), null, "Input/output error");
        }));
        assertEquals("cannot write " + out.resolve("model.safetensors")
                + ": input/output error; the device reported an error; check the disk", failure.getMessage());
        assertFalse(Files.exists(out));
        assertEquals(List.of(), siblings());
    }

    @Test
    void aFailureThatIsOurBugKeepsItsStackTraceAndExitsOne() throws IOException {
        // Two writes of one name inside the staging folder is a mistake of the writer, not of the machine.
        RuntimeException e = assertThrows(RuntimeException.class, () -> StagedFolder.write(temp.resolve("out"), false, 0, folder -> {
            Files.writeString(folder.resolve("a"), "1");
            Files.createFile(folder.resolve("a"));
        }));
        assertInstanceOf(UncheckedIOException.class, e);
        assertInstanceOf(FileAlreadyExistsException.class, e.getCause());
        assertEquals(List.of(), siblings());
    }

    @Test
    void theLocationIsCheckedBeforeAnythingIsWritten() throws IOException {
        Path existing = Files.createDirectories(temp.resolve("existing"));
        assertEquals(existing + " already exists; pass --force to replace it, or choose another folder",
                assertThrows(UserInputException.class, () -> StagedFolder.write(existing, false, 0, folder -> {
                    throw new AssertionError("nothing is written");
                })).getMessage());

        // A path under a regular file fails with ENOTDIR for root too, so this fault needs no special privileges.
        Path file = Files.writeString(temp.resolve("a-file"), "");
        assertEquals("cannot write " + file.resolve("out") + ": " + file + " is a file, not a folder",
                assertThrows(UserInputException.class, () -> OutputLocation.checkNewFolder(file.resolve("out"), false, 0)).getMessage());
        assertEquals("cannot write " + file.resolve("deeper/out") + ": " + file + " is a file, not a folder",
                assertThrows(UserInputException.class, () -> OutputLocation.checkNewFolder(file.resolve("deeper/out"), false, 0)).getMessage());

        long free = OutputLocation.usableSpace(temp).orElseThrow();
        UserInputException full = assertThrows(UserInputException.class,
                () -> StagedFolder.write(temp.resolve("huge"), false, free + 1_000_000_000_000L, folder -> {
                    throw new AssertionError("nothing is written");
                }));
        assertTrue(full.getMessage().startsWith("cannot write " + temp.resolve("huge") + ": not enough space (it needs "), full.getMessage());
        assertTrue(full.getMessage().endsWith(" free); free some space or choose another folder"), full.getMessage());
        assertEquals(List.of(file, existing), siblings());
    }

    @Test
    void theOperatingSystemsReasonsAreTranslatedAndOthersAreNot() throws IOException {
        Path out = temp.resolve("out");
        assertEquals("cannot write " + out + ": permission denied; it needs write permission there; choose a folder you can write to",
                WriteFailure.of(out, new AccessDeniedException(out.toString())).getMessage());
        assertEquals("cannot write " + out + ": read-only file system; choose a folder on a writable file system",
                WriteFailure.of(out, new java.io.FileNotFoundException(out + " (Read-only file system)")).getMessage());
        assertInstanceOf(UncheckedIOException.class, WriteFailure.of(out, new IOException("Stream closed")));
        assumeTrue(Files.isWritable(Path.of("/dev/full")), "no /dev/full on this system");
        // A real ENOSPC: every write to /dev/full fails with it.
        try (FileChannel full = FileChannel.open(Path.of("/dev/full"), StandardOpenOption.WRITE)) {
            IOException real = assertThrows(IOException.class, () -> full.write(ByteBuffer.wrap(new byte[4096])));
            WriteFailure failure = assertInstanceOf(WriteFailure.class, WriteFailure.of(out, real));
            assertTrue(failure.outOfSpace() && failure.getMessage().contains("no space left on device"), failure.getMessage());
        }
    }

    private List<Path> siblings() throws IOException {
        try (Stream<Path> files = Files.list(temp)) {
            return files.sorted().toList();
        }
    }
}
