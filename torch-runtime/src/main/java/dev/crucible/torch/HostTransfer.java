package dev.crucible.torch;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.MemoryFormatOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/** Moves host tensors to a device, copying once. */
final class HostTransfer {
    private HostTransfer() {
    }

    /**
     * A device copy of {@code host} in {@code dtype}. {@code from_blob} only views the host bytes (it never owns
     * memory), and the conversion copies them: one copy, taken while the caller keeps {@code host}'s arena open.
     *
     * <p>When the bytes come from a memory-mapped checkpoint, their pages are dropped from this process's resident
     * memory once copied ({@code madvise(MADV_DONTNEED)} through {@link MemorySegment#unload()}): they stay in the
     * page cache and fault back in if read again, but a loaded model no longer holds its weights twice (the mapped
     * file and the copy), which on the CPU would double the peak resident memory.
     */
    static org.bytedeco.pytorch.Tensor toDevice(HostTensor host, DType dtype, Device device) {
        MemorySegment data = host.data();
        if (!data.isNative()) {
            try (Arena staging = Arena.ofConfined()) {
                MemorySegment copy = staging.allocate(data.byteSize(), 64);
                copy.copyFrom(data);
                return copyToDevice(copy, host, dtype, device);
            }
        }
        org.bytedeco.pytorch.Tensor copy = copyToDevice(data, host, dtype, device);
        if (data.isMapped()) {
            data.unload();
        }
        return copy;
    }

    private static org.bytedeco.pytorch.Tensor copyToDevice(MemorySegment data, HostTensor host, DType dtype,
                                                           Device device) {
        org.bytedeco.pytorch.Tensor view = torch.from_blob(new Address(data.address()), host.shape(),
                new TensorOptions(TorchTypes.scalarType(host.dtype())));
        long bytes = (long) dtype.byteSize() * (data.byteSize() / host.dtype().byteSize());
        if (device.is_cpu() && bytes >= HugePages.SIZE) {
            return onHugePages(view, host.shape(), dtype, bytes);
        }
        return view.to(device, TorchTypes.scalarType(dtype), false, true, new MemoryFormatOptional());
    }

    /**
     * A CPU copy of {@code view} whose bytes start on a 2 MiB boundary, advised for huge pages before they are
     * written (huge pages are chosen when a page is first touched; see {@link HugePages}). libtorch allocates with
     * 64-byte alignment, so a tensor of a few MiB would lose up to 2 MiB of huge pages at each end; this one is a
     * view into a byte buffer one huge page longer, whose slack before the boundary is never touched, so it costs
     * address space, not memory. Only the whole huge pages are advised: the tail stays on small pages rather than
     * fault in a huge page that is mostly slack.
     */
    private static org.bytedeco.pytorch.Tensor onHugePages(org.bytedeco.pytorch.Tensor view, long[] shape, DType dtype,
                                                          long bytes) {
        try (org.bytedeco.pytorch.Tensor buffer = torch.empty(new long[] {bytes + HugePages.SIZE},
                new TensorOptions(torch.ScalarType.Byte), new MemoryFormatOptional())) {
            long address = buffer.data_ptr().address();
            long skip = ((address + HugePages.SIZE - 1) & -HugePages.SIZE) - address;
            try (org.bytedeco.pytorch.Tensor aligned = buffer.narrow(0, skip, bytes);
                 org.bytedeco.pytorch.Tensor typed = aligned.view(TorchTypes.scalarType(dtype))) {
                org.bytedeco.pytorch.Tensor weight = typed.view(shape);
                HugePages.advise(weight);
                weight.copy_(view); // returns weight itself (a C++ reference: the wrapper owns nothing)
                return weight;
            }
        }
    }

    /** A bare native address for {@code from_blob}; it owns nothing. */
    private static final class Address extends Pointer {
        Address(long address) {
            this.address = address;
        }
    }
}
