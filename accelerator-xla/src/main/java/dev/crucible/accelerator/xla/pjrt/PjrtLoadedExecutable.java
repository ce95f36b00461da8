package dev.crucible.accelerator.xla.pjrt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * A program compiled and loaded onto a client's devices ({@code PJRT_LoadedExecutable}); {@link #execute} runs it.
 */
public final class PjrtLoadedExecutable extends NativeHandle {
    private final PjrtApi api;
    private final PjrtClient client;
    private final int numOutputs;
    private final List<PjrtDevice> devices = new ArrayList<>();

    PjrtLoadedExecutable(PjrtApi api, PjrtClient client, MemorySegment handle) {
        super(handle, client);
        this.api = api;
        this.client = client;
        try (PjrtExecutable executable = executable()) {
            this.numOutputs = executable.numOutputs();
            for (MemorySegment device : api.queryPointers(Slot.LOADED_EXECUTABLE_ADDRESSABLE_DEVICES, "executable", handle,
                    "addressable_devices", "num_addressable_devices")) {
                devices.add(client.device(device));
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The compiled program behind this one, for its queries; the caller closes it. */
    public PjrtExecutable executable() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.LOADED_EXECUTABLE_GET_EXECUTABLE.args;
            MemorySegment args = api.call(arena, Slot.LOADED_EXECUTABLE_GET_EXECUTABLE, a -> s.set(a, "loaded_executable", handle()));
            return new PjrtExecutable(api, s.getAddress(args, "executable"), this);
        }
    }

    /** The devices the program runs on, in the order {@link #execute} takes argument lists. */
    public List<PjrtDevice> devices() {
        return List.copyOf(devices);
    }

    public int numOutputs() {
        return numOutputs;
    }

    /**
     * Runs the program: one argument list per device (in {@link #devices()} order), all of one length, and returns
     * one output list per device. Arguments whose index is in {@code donated} are given to the execution (the
     * program aliases them to outputs) and are released when it succeeds; every other argument is marked
     * non-donatable, so the compiler's may-alias guesses never consume a buffer the caller still holds. Waits for
     * every device to finish; a failure on any device closes all outputs and throws.
     */
    public List<List<PjrtBuffer>> execute(List<List<PjrtBuffer>> argumentsPerDevice, Set<Integer> donated) {
        int numDevices = argumentsPerDevice.size();
        if (numDevices != devices.size()) {
            throw new IllegalArgumentException("the program runs on " + devices.size() + " devices, got "
                    + numDevices + " argument lists");
        }
        int numArgs = argumentsPerDevice.getFirst().size();
        for (List<PjrtBuffer> list : argumentsPerDevice) {
            if (list.size() != numArgs) {
                throw new IllegalArgumentException("argument lists differ in length: " + numArgs + " and " + list.size());
            }
        }
        List<List<PjrtBuffer>> outputs = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment argumentLists = arena.allocate(ValueLayout.ADDRESS, numDevices);
            MemorySegment outputLists = arena.allocate(ValueLayout.ADDRESS, numDevices);
            MemorySegment events = arena.allocate(ValueLayout.ADDRESS, numDevices);
            for (int d = 0; d < numDevices; d++) {
                MemorySegment list = arena.allocate(ValueLayout.ADDRESS, Math.max(1, numArgs));
                for (int i = 0; i < numArgs; i++) {
                    list.setAtIndex(ValueLayout.ADDRESS, i, argumentsPerDevice.get(d).get(i).handle());
                }
                argumentLists.setAtIndex(ValueLayout.ADDRESS, d, list);
                outputLists.setAtIndex(ValueLayout.ADDRESS, d, arena.allocate(ValueLayout.ADDRESS, Math.max(1, numOutputs)));
            }
            long[] kept = java.util.stream.IntStream.range(0, numArgs).filter(i -> !donated.contains(i))
                    .asLongStream().toArray();
            MemorySegment nonDonatable = arena.allocate(ValueLayout.JAVA_LONG, Math.max(1, kept.length));
            MemorySegment.copy(kept, 0, nonDonatable, ValueLayout.JAVA_LONG, 0, kept.length);
            Struct o = Slot.EXECUTE_OPTIONS;
            MemorySegment options = o.allocate(arena);
            o.set(options, "non_donatable_input_indices", nonDonatable);
            o.set(options, "num_non_donatable_input_indices", kept.length);

            Struct s = Slot.LOADED_EXECUTABLE_EXECUTE.args;
            api.call(arena, Slot.LOADED_EXECUTABLE_EXECUTE, a -> {
                s.set(a, "executable", handle());
                s.set(a, "options", options);
                s.set(a, "argument_lists", argumentLists);
                s.set(a, "num_devices", numDevices);
                s.set(a, "num_args", numArgs);
                s.set(a, "output_lists", outputLists);
                s.set(a, "device_complete_events", events);
            });
            // Own every output and every event before waiting, so a failure below leaks nothing.
            RuntimeException failure = null;
            for (int d = 0; d < numDevices; d++) {
                MemorySegment list = outputLists.getAtIndex(ValueLayout.ADDRESS, d).reinterpret(8L * Math.max(1, numOutputs));
                List<PjrtBuffer> deviceOutputs = new ArrayList<>();
                for (int i = 0; i < numOutputs; i++) {
                    MemorySegment buffer = list.getAtIndex(ValueLayout.ADDRESS, i);
                    try {
                        deviceOutputs.add(new PjrtBuffer(api, client, buffer));
                    } catch (RuntimeException e) {
                        failure = failure == null ? e : failure;
                    }
                }
                outputs.add(deviceOutputs);
            }
            for (int d = 0; d < numDevices; d++) {
                try {
                    api.awaitAndDestroy(Slot.LOADED_EXECUTABLE_EXECUTE.functionName(), events.getAtIndex(ValueLayout.ADDRESS, d));
                } catch (RuntimeException e) {
                    failure = failure == null ? e : failure;
                }
            }
            if (failure != null) {
                outputs.forEach(list -> list.forEach(PjrtBuffer::close));
                throw failure;
            }
        }
        for (List<PjrtBuffer> list : argumentsPerDevice) {
            for (int i : donated) {
                list.get(i).release("donated to an execution of " + this);
            }
        }
        return outputs;
    }

    @Override
    void destroy(MemorySegment handle) {
        api.destroy(Slot.LOADED_EXECUTABLE_DESTROY, "executable", handle);
    }
}
