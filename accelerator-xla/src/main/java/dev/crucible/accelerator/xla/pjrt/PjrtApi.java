package dev.crucible.accelerator.xla.pjrt;

import dev.crucible.api.UserInputException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A plugin's {@code PJRT_Api} function table and the three things every call needs: invoking a slot with its
 * argument struct, turning a returned {@code PJRT_Error*} into a {@link PjrtException} (destroying the error), and
 * awaiting then destroying an event. Everything above this class speaks Java types.
 */
final class PjrtApi {
    static final int SUPPORTED_MAJOR = 0;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final FunctionDescriptor RETURNS_ERROR = FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS);
    private static final FunctionDescriptor RETURNS_VOID = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS);

    private final Path library;
    private final long structSize;
    private final int major;
    private final int minor;
    private final Map<Slot, MethodHandle> functions = new EnumMap<>(Slot.class);

    private PjrtApi(Path library, MemorySegment table) {
        this.library = library;
        this.structSize = table.get(ValueLayout.JAVA_LONG, 0);
        MemorySegment api = table.reinterpret(Math.max(structSize, Slot.FIRST_SLOT_OFFSET));
        // PJRT_Api_Version sits at 16: struct_size, extension_start, major_version, minor_version.
        this.major = api.get(ValueLayout.JAVA_INT, 32);
        this.minor = api.get(ValueLayout.JAVA_INT, 36);
        if (major != SUPPORTED_MAJOR) {
            throw new UserInputException("PJRT plugin " + library + " speaks PJRT C API " + major + "." + minor
                    + "; this build of Crucible speaks " + SUPPORTED_MAJOR + ".x");
        }
        long needed = Arrays.stream(Slot.values()).mapToLong(s -> s.offset() + 8).max().orElseThrow();
        if (structSize < needed) {
            Slot missing = Arrays.stream(Slot.values()).filter(s -> s.offset() + 8 > structSize).findFirst().orElseThrow();
            throw new UserInputException("PJRT plugin " + library + " (PJRT C API " + major + "." + minor
                    + ") is too old: its function table has " + structSize + " bytes and lacks "
                    + missing.functionName() + "; install a newer plugin");
        }
        for (Slot slot : Slot.values()) {
            MemorySegment pointer = api.get(ValueLayout.ADDRESS, slot.offset());
            if (!pointer.equals(MemorySegment.NULL)) {
                boolean returnsVoid = slot == Slot.ERROR_DESTROY || slot == Slot.ERROR_MESSAGE;
                functions.put(slot, LINKER.downcallHandle(pointer, returnsVoid ? RETURNS_VOID : RETURNS_ERROR));
            }
        }
    }

    /** Opens {@code library} for the life of the process (a PJRT plugin is never unloaded) and reads its table. */
    static PjrtApi open(Path library) {
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException e) {
            throw new UserInputException("cannot load PJRT plugin " + library + ": " + e.getMessage(), e);
        }
        MemorySegment getPjrtApi = lookup.find("GetPjrtApi").orElseThrow(() -> new UserInputException(
                library + " is not a PJRT plugin: it exports no GetPjrtApi"));
        MemorySegment table;
        try {
            table = (MemorySegment) LINKER.downcallHandle(getPjrtApi, FunctionDescriptor.of(ValueLayout.ADDRESS))
                    .invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("GetPjrtApi of " + library + " failed", t);
        }
        if (table.equals(MemorySegment.NULL)) {
            throw new UserInputException("PJRT plugin " + library + " returned no API table from GetPjrtApi");
        }
        return fromTable(library, table);
    }

    /** Reads a {@code PJRT_Api} table at {@code table} (tests hand it tables they laid out themselves). */
    static PjrtApi fromTable(Path library, MemorySegment table) {
        return new PjrtApi(library, table.reinterpret(Slot.FIRST_SLOT_OFFSET));
    }

    Path library() {
        return library;
    }

    long structSize() {
        return structSize;
    }

    String version() {
        return major + "." + minor;
    }

    boolean offers(Slot slot) {
        return functions.containsKey(slot);
    }

    /**
     * Calls {@code slot} with a fresh argument struct that {@code fill} completes, allocated in {@code arena}, and
     * returns the struct so the caller can read the outputs. A returned error is thrown as a {@link PjrtException}.
     */
    MemorySegment call(Arena arena, Slot slot, Consumer<MemorySegment> fill) {
        MemorySegment args = slot.args.allocate(arena);
        fill.accept(args);
        throwIfError(slot.functionName(), invoke(slot, args));
        return args;
    }

    /** A query whose struct takes one object and answers a string as {@code field} and {@code field_size}. */
    String queryString(Slot slot, String objectField, MemorySegment object, String field) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = call(arena, slot, a -> slot.args.set(a, objectField, object));
            return string(slot.args.getAddress(args, field), slot.args.getLong(args, field + "_size"));
        }
    }

    /** A query whose struct takes one object and answers a number (or bool) as {@code field}. */
    long queryLong(Slot slot, String objectField, MemorySegment object, String field) {
        try (Arena arena = Arena.ofConfined()) {
            return slot.args.getLong(call(arena, slot, a -> slot.args.set(a, objectField, object)), field);
        }
    }

    /** A query whose struct takes one object and answers a plugin-owned array of pointers and its length. */
    MemorySegment[] queryPointers(Slot slot, String objectField, MemorySegment object, String arrayField, String countField) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = call(arena, slot, a -> slot.args.set(a, objectField, object));
            return pointers(slot.args.getAddress(args, arrayField), slot.args.getLong(args, countField));
        }
    }

    /** A destroy call: its struct takes the object to destroy. */
    void destroy(Slot slot, String objectField, MemorySegment object) {
        try (Arena arena = Arena.ofConfined()) {
            call(arena, slot, a -> slot.args.set(a, objectField, object));
        }
    }

    /** Invokes the slot on a prepared struct and returns the raw {@code PJRT_Error*} (tests use it directly). */
    MemorySegment invoke(Slot slot, MemorySegment args) {
        MethodHandle function = functions.get(slot);
        if (function == null) {
            throw new PjrtException(slot.functionName(), PjrtException.UNIMPLEMENTED,
                    "the plugin " + library.getFileName() + " does not offer " + slot.functionName());
        }
        try {
            if (slot == Slot.ERROR_DESTROY || slot == Slot.ERROR_MESSAGE) {
                function.invokeExact(args);
                return MemorySegment.NULL;
            }
            return (MemorySegment) function.invokeExact(args);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(slot.functionName() + " could not be called", t);
        }
    }

    /** Calls a {@code void f(void*)} function pointer the plugin handed out (a deleter). */
    static void callVoid(MemorySegment function, MemorySegment argument) {
        try {
            LINKER.downcallHandle(function, RETURNS_VOID).invokeExact(argument);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("a plugin callback could not be called", t);
        }
    }

    /** Reads, destroys and throws a non-null {@code PJRT_Error*}. */
    void throwIfError(String function, MemorySegment error) {
        if (error.equals(MemorySegment.NULL)) {
            return;
        }
        throw takeError(function, error);
    }

    /** The exception for {@code error}, which is destroyed here. */
    PjrtException takeError(String function, MemorySegment error) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment message = Slot.ERROR_MESSAGE.args.allocate(arena);
            Slot.ERROR_MESSAGE.args.set(message, "error", error);
            invoke(Slot.ERROR_MESSAGE, message);
            String text = string(Slot.ERROR_MESSAGE.args.getAddress(message, "message"),
                    Slot.ERROR_MESSAGE.args.getLong(message, "message_size"));
            MemorySegment code = Slot.ERROR_GET_CODE.args.allocate(arena);
            Slot.ERROR_GET_CODE.args.set(code, "error", error);
            MemorySegment codeError = invoke(Slot.ERROR_GET_CODE, code);
            int status = codeError.equals(MemorySegment.NULL) ? Slot.ERROR_GET_CODE.args.getInt(code, "code") : 2;
            destroyError(codeError);
            destroyError(error);
            return new PjrtException(function, status, text);
        }
    }

    private void destroyError(MemorySegment error) {
        if (error.equals(MemorySegment.NULL)) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = Slot.ERROR_DESTROY.args.allocate(arena);
            Slot.ERROR_DESTROY.args.set(args, "error", error);
            invoke(Slot.ERROR_DESTROY, args);
        }
    }

    /**
     * Waits for {@code event} and destroys it, whatever the outcome; an event that completed with an error throws it,
     * attributed to {@code function} (the call that returned the event). A NULL event means nothing to wait for.
     */
    void awaitAndDestroy(String function, MemorySegment event) {
        if (event.equals(MemorySegment.NULL)) {
            return;
        }
        MemorySegment failure;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment await = Slot.EVENT_AWAIT.args.allocate(arena);
            Slot.EVENT_AWAIT.args.set(await, "event", event);
            failure = invoke(Slot.EVENT_AWAIT, await);
        } finally {
            destroyEvent(event);
        }
        throwIfError(function, failure);
    }

    /** Destroys an event without waiting for it (only where the event is known to be complete or unwanted). */
    void destroyEvent(MemorySegment event) {
        if (event.equals(MemorySegment.NULL)) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            call(arena, Slot.EVENT_DESTROY, a -> Slot.EVENT_DESTROY.args.set(a, "event", event));
        }
    }

    /** A string the plugin returned as pointer and size (PJRT strings are not NUL-terminated). */
    static String string(MemorySegment pointer, long size) {
        if (size == 0 || pointer.equals(MemorySegment.NULL)) {
            return "";
        }
        return new String(pointer.reinterpret(size).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
    }

    /** {@code size} pointers from a plugin-owned array. */
    static MemorySegment[] pointers(MemorySegment array, long size) {
        MemorySegment[] out = new MemorySegment[Math.toIntExact(size)];
        MemorySegment view = size == 0 ? array : array.reinterpret(size * 8);
        for (int i = 0; i < out.length; i++) {
            out[i] = view.getAtIndex(ValueLayout.ADDRESS, i);
        }
        return out;
    }

    /** Copies {@code bytes} into {@code arena} (at least one byte, so the pointer is never NULL); the caller passes the size. */
    static MemorySegment bytes(Arena arena, byte[] bytes) {
        MemorySegment segment = arena.allocate(Math.max(1, bytes.length));
        MemorySegment.copy(bytes, 0, segment, ValueLayout.JAVA_BYTE, 0, bytes.length);
        return segment;
    }
}
