package dev.crucible.accelerator.cuda;

import dev.crucible.torch.LibtorchBuild;
import dev.crucible.torch.TorchRuntime;
import java.util.Optional;
import org.bytedeco.pytorch.SizeTPair;
import org.bytedeco.pytorch.global.torch;

/**
 * What the cuda backend asks of CUDA once libtorch's CUDA build is loaded: free and total memory per GPU and
 * emptying the caching allocator. Behind an interface so the policies built on it are tested against a fake device
 * here, where there is no GPU.
 */
interface CudaRuntime {

    /** Free and total bytes of one GPU, as the driver counts them (other processes' use included). */
    record Memory(long freeBytes, long totalBytes) { }

    /** GPUs libtorch sees. */
    int deviceCount();

    Memory memory(int device);

    /** Returns every cached, unused block of libtorch's allocator to the driver, on every GPU. */
    void emptyCache();

    /** The loaded runtime; empty before the CUDA build of libtorch is loaded (nothing can be cached then). */
    static Optional<CudaRuntime> loaded() {
        return TorchRuntime.loadedBuild().filter(LibtorchBuild.CUDA::equals).map(build -> new Libtorch());
    }

    /**
     * libtorch's device-generic accelerator API ({@code at::accelerator}, in the main preset, so no CUDA preset
     * classes are needed): {@code getMemoryInfo} is {@code cudaMemGetInfo} on that device, {@code emptyCache} the
     * CUDA caching allocator's.
     */
    final class Libtorch implements CudaRuntime {
        @Override
        public int deviceCount() {
            return torch.cuda_device_count();
        }

        @Override
        public Memory memory(int device) {
            SizeTPair info = torch.getMemoryInfo((byte) device);
            try {
                return new Memory(info.first(), info.second());
            } finally {
                info.close();
            }
        }

        @Override
        public void emptyCache() {
            torch.emptyCache();
        }
    }
}
