package dev.crucible.runner.study;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.UserInputException;
import dev.crucible.api.io.WriteFailure;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The append-only record of a study: {@code DIR/journal.jsonl}, one JSON object per line. Line 1 is the
 * {@linkplain StudyHeader header}; every further line is one finished trial (number, state, parameters with their
 * distributions, scores with value and display, start, end, duration, failure reason).
 *
 * <p>Durability: each line is written with a single write and then forced to disk ({@code fsync}), so a killed
 * process loses at most the trial that was running. A line counts only once its newline is on disk: a last line
 * without one (the process died mid-write) is ignored and cut off before anything is appended, and {@link
 * #repairedTornRecord()} says which trial it was recording, so that the user learns that trial is run again; a bad
 * line anywhere else is an error naming its line number, since silently dropping finished trials would be worse.
 *
 * <p>The journal is written only under its study's {@link StudyLock}, so two runs cannot interleave trials.
 */
public final class StudyJournal implements Closeable {

    public static final String FILE_NAME = "journal.jsonl";
    private static final String ON_EXISTING_HINT = "--on-existing continue|restart|exit";
    private static final DateTimeFormatter BACKUP_TIME =
            DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

    /** Forces written bytes to stable storage; a seam so that tests can watch each force happen. */
    interface Sync {
        void force(FileChannel channel) throws IOException;
    }

    /** The real fsync, file contents and metadata. */
    static final Sync FSYNC = channel -> channel.force(true);

    /**
     * A trial record cut off by a killed run (no newline at its end), removed when the journal was opened.
     *
     * @param line  its line number in the file
     * @param trial the trial it was recording: the number in the cut line when it got that far, else one past the
     *              highest finished trial (the number a sequential study gives next)
     */
    public record TornRecord(int line, int trial) {
    }

    /** A journal's contents, read without changing the file. */
    public record Contents(StudyHeader header, List<FrozenTrial> trials) {
        public Contents {
            trials = List.copyOf(trials);
        }
    }

    private final Path file;
    private final StudyHeader header;
    private final List<FrozenTrial> trials;
    private final Set<Integer> numbers = new HashSet<>();
    private final Path backup;
    private final FileChannel channel;
    /** The study's lock when the journal took it itself (and releases it on close); null when the caller holds it. */
    private final StudyLock ownLock;
    private final Sync sync;
    private final JournalCodec codec;
    private final TornRecord torn;

    private StudyJournal(Path file, StudyHeader header, List<FrozenTrial> trials, Path backup, FileChannel channel,
                         StudyLock ownLock, Sync sync, JournalCodec codec, TornRecord torn) {
        this.file = file;
        this.header = header;
        this.trials = new ArrayList<>(trials);
        trials.forEach(t -> numbers.add(t.number()));
        this.backup = backup;
        this.channel = channel;
        this.ownLock = ownLock;
        this.sync = sync;
        this.codec = codec;
        this.torn = torn;
    }

    /**
     * Opens the study in {@code directory} (created if missing), taking its {@link StudyLock} for as long as the
     * journal is open. A new study gets {@code header}; an existing one is handled as {@code onExisting} says. For
     * {@link OnExisting#CONTINUE} the stored header must describe the same study (seed, objectives, search space,
     * settings), and its trials are available from {@link #trials()} for replay.
     */
    public static StudyJournal open(Path directory, StudyHeader header, OnExisting onExisting) throws IOException {
        return open(directory, header, onExisting, Clock.systemUTC(), FSYNC);
    }

    /** Opens the study whose lock the caller took (before its expensive work) and keeps holding. */
    public static StudyJournal open(StudyLock lock, StudyHeader header, OnExisting onExisting) throws IOException {
        return open(lock.directory(), null, header, onExisting, Clock.systemUTC(), FSYNC);
    }

    static StudyJournal open(Path directory, StudyHeader header, OnExisting onExisting, Clock clock, Sync sync)
            throws IOException {
        StudyLock lock = StudyLock.acquire(directory);
        try {
            return open(directory, lock, header, onExisting, clock, sync);
        } catch (IOException | RuntimeException e) {
            lock.close();
            throw e;
        }
    }

    private static StudyJournal open(Path directory, StudyLock ownLock, StudyHeader header, OnExisting onExisting,
                                     Clock clock, Sync sync) throws IOException {
        Objects.requireNonNull(header, "header is null");
        Objects.requireNonNull(onExisting, "onExisting is null");
        Path file = directory.resolve(FILE_NAME);
        JournalCodec codec = new JournalCodec();
        boolean exists = Files.exists(file) && Files.size(file) > 0;
        Path backup = null;
        if (exists && onExisting == OnExisting.EXIT) {
            throw new UserInputException("study " + directory + " already exists (" + completeLines(file)
                    + " finished trials); choose with " + ON_EXISTING_HINT
                    + ": continue adds trials, restart keeps the old journal as a backup and starts over");
        }
        if (exists && onExisting == OnExisting.RESTART) {
            backup = moveAside(file, clock);
            syncDirectory(directory);
            exists = false;
        }

        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND);
        try {
            List<FrozenTrial> trials = List.of();
            StudyHeader effective = header;
            TornRecord torn = null;
            Parsed parsed = exists ? parse(file, codec) : null;
            if (parsed != null && parsed.header() != null) {
                checkSameStudy(directory, codec, parsed.headerNode(), header);
                effective = parsed.header();
                trials = parsed.trials();
                if (parsed.validLength() < Files.size(file)) {
                    // A torn last line: cut it off so the next record starts on a line of its own.
                    torn = parsed.tail().isBlank() ? null : parsed.tornRecord();
                    channel.truncate(parsed.validLength());
                    sync.force(channel);
                }
            } else {
                // New, or nothing but a torn header: start clean.
                try {
                    channel.truncate(0);
                    writeLine(channel, codec.line(codec.header(header)), sync);
                } catch (IOException e) {
                    throw WriteFailure.of(file, e);
                }
                syncDirectory(directory);
            }
            return new StudyJournal(file, effective, trials, backup, channel, ownLock, sync, codec, torn);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /** Reads a journal without changing it (a torn last line is ignored, not removed). */
    public static Contents read(Path directory) throws IOException {
        Path file = directory.resolve(FILE_NAME);
        if (!Files.isRegularFile(file)) {
            throw new UserInputException("no study journal at " + file + "; run a study with --study " + directory);
        }
        Parsed parsed = parse(file, new JournalCodec());
        if (parsed.header() == null) {
            throw new UserInputException("study journal " + file + " has no complete header line");
        }
        return new Contents(parsed.header(), parsed.trials());
    }

    /**
     * The journal in {@code directory} when a study was started there (it has a complete header line), read without
     * changing it; empty when there is none, as {@link #open} would start a new one.
     */
    public static Optional<Contents> readIfStarted(Path directory) throws IOException {
        Path file = directory.resolve(FILE_NAME);
        if (!Files.isRegularFile(file) || Files.size(file) == 0) {
            return Optional.empty();
        }
        Parsed parsed = parse(file, new JournalCodec());
        return parsed.header() == null ? Optional.empty() : Optional.of(new Contents(parsed.header(), parsed.trials()));
    }

    /** The study's header: the stored one when continuing, the given one otherwise. */
    public StudyHeader header() {
        return header;
    }

    /** Finished trials, those read at open followed by those appended since, by number. */
    public synchronized List<FrozenTrial> trials() {
        return List.copyOf(trials);
    }

    public Path file() {
        return file;
    }

    /** The cut-off trial record that {@link #open} removed, if the last run was killed while writing one. */
    public Optional<TornRecord> repairedTornRecord() {
        return Optional.ofNullable(torn);
    }

    /** Where {@link OnExisting#RESTART} moved the previous journal, if it did. */
    public Optional<Path> backup() {
        return Optional.ofNullable(backup);
    }

    /**
     * Appends one finished trial and forces it to disk before returning.
     *
     * @throws WriteFailure when the machine refuses the write
     */
    public synchronized void append(FrozenTrial trial) {
        Objects.requireNonNull(trial, "trial is null");
        if (!channel.isOpen()) {
            throw new IllegalStateException("journal " + file + " is closed");
        }
        if (numbers.contains(trial.number())) {
            throw new IllegalArgumentException("trial " + trial.number() + " is already in " + file);
        }
        if (trial.state() == TrialState.COMPLETE && trial.scores().size() != header.objectives().size()) {
            throw new IllegalArgumentException("trial " + trial.number() + " has " + trial.scores().size()
                    + " scores, the study has " + header.objectives().size() + " objectives");
        }
        try {
            writeLine(channel, codec.line(codec.trial(trial, header.objectives())), sync);
        } catch (IOException e) {
            // A full disk or a failing device: one line naming the journal, and what is safe.
            RuntimeException failure = WriteFailure.of(file, e);
            throw failure instanceof WriteFailure machine
                    ? machine.with("the " + trials.size() + " trials journaled before it are kept, and the same command"
                            + " continues the study") : failure;
        }
        trials.add(trial);
        trials.sort(Comparator.comparingInt(FrozenTrial::number));
        numbers.add(trial.number());
    }

    @Override
    public synchronized void close() throws IOException {
        if (channel.isOpen()) {
            channel.close();
            if (ownLock != null) {
                ownLock.close();
            }
        }
    }

    // ---- writing ----

    /** The whole line in one write call (looping only if the OS takes it in pieces), then one force. */
    private static void writeLine(FileChannel channel, String json, Sync sync) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap((json + "\n").getBytes(StandardCharsets.UTF_8));
        while (bytes.hasRemaining()) {
            channel.write(bytes);
        }
        sync.force(channel);
    }

    /** Makes a created or renamed directory entry durable too. Best effort: not every platform can open a folder. */
    private static void syncDirectory(Path directory) {
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            dir.force(true);
        } catch (IOException e) {
            // The entry still reaches the disk with the next metadata flush; only a power cut before it loses it.
        }
    }

    private static Path moveAside(Path file, Clock clock) throws IOException {
        String stamp = BACKUP_TIME.format(clock.instant());
        Path target = file.resolveSibling(FILE_NAME + ".bak-" + stamp);
        for (int i = 1; Files.exists(target); i++) {
            target = file.resolveSibling(FILE_NAME + ".bak-" + stamp + "-" + i);
        }
        return Files.move(file, target, StandardCopyOption.ATOMIC_MOVE);
    }

    // ---- reading ----

    /**
     * @param validLength the bytes up to the last newline
     * @param tail        what follows them: empty, or a record a killed run did not finish
     * @param tailLine    the line number of the tail
     */
    private record Parsed(StudyHeader header, JsonNode headerNode, List<FrozenTrial> trials, long validLength,
                          String tail, int tailLine) {
        private static final Pattern TRIAL_NUMBER = Pattern.compile("\"number\"\\s*:\\s*(\\d+)");

        /** The tail as a trial record: the number it carries if the cut left it whole, else the next one. */
        TornRecord tornRecord() {
            Matcher number = TRIAL_NUMBER.matcher(tail);
            if (number.find() && number.end() < tail.length()) {
                return new TornRecord(tailLine, Integer.parseInt(number.group(1)));
            }
            return new TornRecord(tailLine, trials.isEmpty() ? 0 : trials.getLast().number() + 1);
        }
    }

    private static long completeLines(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        long newlines = 0;
        for (byte b : bytes) {
            if (b == '\n') {
                newlines++;
            }
        }
        return Math.max(0, newlines - 1);
    }

    private static Parsed parse(Path file, JournalCodec codec) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        StudyHeader header = null;
        JsonNode headerNode = null;
        List<FrozenTrial> trials = new ArrayList<>();
        Set<Integer> numbers = new TreeSet<>();
        int lineStart = 0;
        int lineNumber = 0;
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] != '\n') {
                continue;
            }
            lineNumber++;
            String line = new String(bytes, lineStart, i - lineStart, StandardCharsets.UTF_8);
            lineStart = i + 1;
            if (line.isBlank()) {
                continue;
            }
            try {
                JsonNode node = codec.parse(line);
                if (header == null) {
                    int version = codec.formatVersion(node);
                    if (version > StudyHeader.FORMAT_VERSION) {
                        throw new UserInputException("study journal " + file + " has format " + version
                                + " from a newer Crucible (this one reads up to " + StudyHeader.FORMAT_VERSION
                                + "); use a newer runner or another --study directory");
                    }
                    header = codec.header(node);
                    headerNode = node;
                } else {
                    FrozenTrial trial = codec.trial(node, header.objectives());
                    if (!numbers.add(trial.number())) {
                        throw new JournalCodec.FormatException("trial " + trial.number() + " appears twice");
                    }
                    trials.add(trial);
                }
            } catch (JournalCodec.FormatException e) {
                throw new UserInputException("study journal " + file + " line " + lineNumber + " is malformed: "
                        + e.getMessage() + "; repair or delete that line, or start over with --on-existing restart");
            }
        }
        trials.sort(Comparator.comparingInt(FrozenTrial::number));
        String tail = new String(bytes, lineStart, bytes.length - lineStart, StandardCharsets.UTF_8);
        return new Parsed(header, headerNode, trials, lineStart, tail, lineNumber + 1);
    }

    /** Refuses to continue a study whose identity (seed, objectives, search space, settings) differs. */
    private static void checkSameStudy(Path directory, JournalCodec codec, JsonNode stored, StudyHeader current) {
        JsonNode now;
        try {
            now = codec.normalized(current);
        } catch (JournalCodec.FormatException e) {
            throw new IllegalStateException("cannot encode the study header", e);
        }
        String difference = firstDifference(stored, now);
        if (difference != null) {
            throw new UserInputException("study " + directory + " was started with a different " + difference
                    + "; use another --study directory or --on-existing restart");
        }
    }

    private static String firstDifference(JsonNode stored, JsonNode now) {
        for (String field : List.of("seed", "objectives")) {
            if (!stored.path(field).equals(now.path(field))) {
                return field + " (journal: " + stored.path(field) + ", this run: " + now.path(field) + ")";
            }
        }
        for (String section : List.of("search_space", "settings")) {
            JsonNode a = stored.path(section);
            JsonNode b = now.path(section);
            Set<String> keys = new TreeSet<>();
            a.fieldNames().forEachRemaining(keys::add);
            b.fieldNames().forEachRemaining(keys::add);
            for (Iterator<String> it = keys.iterator(); it.hasNext(); ) {
                String key = it.next();
                if (!a.path(key).equals(b.path(key))) {
                    String label = section.equals("search_space") ? "search space for '" + key + "'" : key;
                    return label + " (journal: " + show(a.get(key)) + ", this run: " + show(b.get(key)) + ")";
                }
            }
        }
        return null;
    }

    private static String show(JsonNode node) {
        return node == null ? "absent" : node.toString();
    }
}
