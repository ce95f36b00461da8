package dev.crucible.accelerator.xla.pjrt;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A PJRT object this process must destroy exactly once. Objects made through a client or topology are also
 * registered with it, so closing the parent destroys whatever its children's owners left open (newest first) before
 * the parent itself; closing a child earlier takes it off the list. Nothing waits for the garbage collector.
 */
abstract class NativeHandle implements AutoCloseable {
    private final MemorySegment handle;
    private final NativeHandle parent;
    private final Set<NativeHandle> children = new LinkedHashSet<>();
    private boolean closed;
    private String closedBecause = "closed";

    NativeHandle(MemorySegment handle, NativeHandle parent) {
        if (handle.equals(MemorySegment.NULL)) {
            throw new IllegalStateException(getClass().getSimpleName() + ": the plugin returned NULL");
        }
        this.handle = handle;
        this.parent = parent;
        if (parent != null) {
            parent.adopt(this);
        }
    }

    /** The PJRT pointer; throws once this object is closed (or was donated). */
    final MemorySegment handle() {
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException(getClass().getSimpleName() + " is " + closedBecause);
            }
        }
        return handle;
    }

    /** Closed by its holder, by its parent, or (a buffer) consumed by a donation. */
    public final synchronized boolean isClosed() {
        return closed;
    }

    /** The PJRT destroy call for this kind of object. */
    abstract void destroy(MemorySegment handle);

    @Override
    public final void close() {
        release("closed");
    }

    /** Destroys the handle once; {@code reason} is what a later use is told ("donated to ..."). */
    final void release(String reason) {
        List<NativeHandle> orphans;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            closedBecause = reason;
            orphans = new ArrayList<>(children);
            children.clear();
        }
        RuntimeException failure = null;
        for (NativeHandle child : orphans.reversed()) {
            try {
                child.close();
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        try {
            destroy(handle);
        } finally {
            if (parent != null) {
                parent.forget(this);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private synchronized void adopt(NativeHandle child) {
        if (closed) {
            throw new IllegalStateException(getClass().getSimpleName() + " is " + closedBecause);
        }
        children.add(child);
    }

    private synchronized void forget(NativeHandle child) {
        children.remove(child);
    }
}
