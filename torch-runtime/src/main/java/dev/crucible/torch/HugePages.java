package dev.crucible.torch;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.Optional;

/**
 * Asks Linux to back large CPU weights with transparent huge pages ({@code madvise(MADV_HUGEPAGE)}) before their
 * first byte is written. A decode step streams every weight once, and one core's hardware prefetchers stop at every
 * 4 KiB page boundary: measured on this project's 2-core Zen 4 machine, one thread's streaming read of 1 GiB ran at
 * 22 GB/s on 4 KiB pages and 31 GB/s on 2 MiB pages, and a bf16 decode of a Qwen2.5-0.5B-shaped model went from
 * 17.7 to 19.9 tokens/s. Distributions default to {@code transparent_hugepage=madvise}, where only advised memory
 * gets huge pages, so the advice is what makes the difference.
 *
 * <p>Only the 2 MiB-aligned interior of a range is advised (the kernel places anonymous mappings of 2 MiB or more on
 * 2 MiB boundaries, so glibc's large allocations are almost whole); smaller ranges are left alone. The advice is a
 * hint: where the system refuses it (another OS, THP disabled, no free huge pages) nothing changes but the speed.
 */
final class HugePages {
    static final long SIZE = 2L << 20;
    private static final int MADV_HUGEPAGE = 14;
    private static final Optional<MethodHandle> MADVISE = madvise();

    private HugePages() {
    }

    /** Advises {@code [address, address + bytes)}; returns the bytes advised (0 where nothing was). */
    static long advise(long address, long bytes) {
        long from = (address + SIZE - 1) & -SIZE;
        long to = (address + bytes) & -SIZE;
        if (MADVISE.isEmpty() || to <= from) {
            return 0;
        }
        try {
            int result = (int) MADVISE.get().invokeExact(MemorySegment.ofAddress(from), to - from, MADV_HUGEPAGE);
            return result == 0 ? to - from : 0;
        } catch (Throwable e) {
            return 0;
        }
    }

    /** Advises the storage of a freshly allocated, not yet written CPU tensor. */
    static long advise(org.bytedeco.pytorch.Tensor tensor) {
        return advise(tensor.data_ptr().address(), tensor.nbytes());
    }

    private static Optional<MethodHandle> madvise() {
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
            return Optional.empty();
        }
        Linker linker = Linker.nativeLinker();
        return linker.defaultLookup().find("madvise").map(symbol -> linker.downcallHandle(symbol,
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT)));
    }
}
