package dev.crucible.torch;

import dev.crucible.api.backend.Ceilings;
import dev.crucible.api.tensor.DType;
import java.time.Duration;
import java.util.Locale;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.DimnameListOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * Measures a device's ceilings through libtorch itself, so a model's speed is compared with what the same runtime
 * reaches: a square matrix product in the model's dtype, and a sum over a float32 buffer far larger than any cache
 * (every byte read once per pass, nothing written back). Each reads a value back per repetition, which also
 * waits for an asynchronous device.
 */
final class CeilingProbe {
    private final Device device;
    private final int matrixSize;
    private final long streamBytes;

    /**
     * @param matrixSize  side of the square matrices: large enough that the product is compute-bound
     * @param streamBytes size of the buffer read: many times the largest cache
     */
    CeilingProbe(Device device, int matrixSize, long streamBytes) {
        this.device = device;
        this.matrixSize = matrixSize;
        this.streamBytes = streamBytes;
    }

    Ceilings measure(DType dtype, Duration budget) {
        long half = Math.max(1, budget.toNanos() / 2);
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            Rate matmul = matmul(dtype, half);
            Rate stream = stream(half);
            String method = String.format(Locale.ROOT, "matmul %d² %s ×%d; sum over %d MiB f32 ×%d", matrixSize,
                    dtype.userName(), matmul.repetitions, streamBytes >> 20, stream.repetitions);
            return new Ceilings(dtype, matmul.perSecond / 1e9, stream.perSecond / 1e9, method);
        }
    }

    private Rate matmul(DType dtype, long nanos) {
        TensorOptions options = options(TorchTypes.scalarType(dtype));
        Tensor a = torch.rand(new long[] {matrixSize, matrixSize}, new DimnameListOptional(), options);
        Tensor b = torch.rand(new long[] {matrixSize, matrixSize}, new DimnameListOptional(), options);
        double flops = 2.0 * matrixSize * matrixSize * matrixSize;
        return repeat(nanos, flops, () -> {
            try (PointerScope step = new PointerScope()) {
                torch.matmul(a, b).select(0, 0).select(0, 0).item();
            }
        });
    }

    private Rate stream(long nanos) {
        Tensor buffer = torch.empty(new long[] {streamBytes / 4}, options(torch.ScalarType.Float),
                new org.bytedeco.pytorch.MemoryFormatOptional());
        if (device.is_cpu()) {
            HugePages.advise(buffer); // the pages weights are placed on, so the ceiling is the one they can reach
        }
        buffer.fill_(new Scalar(1.0)); // real pages: an untouched buffer would read the shared zero page
        return repeat(nanos, streamBytes, () -> {
            try (PointerScope step = new PointerScope()) {
                buffer.sum().item();
            }
        });
    }

    /** One untimed warm-up, then repetitions until {@code nanos} have passed (at least two). */
    private static Rate repeat(long nanos, double work, Runnable once) {
        once.run();
        int repetitions = 0;
        long start = System.nanoTime();
        long elapsed;
        do {
            once.run();
            repetitions++;
            elapsed = System.nanoTime() - start;
        } while (elapsed < nanos || repetitions < 2);
        return new Rate(work * repetitions / (elapsed / 1e9), repetitions);
    }

    private TensorOptions options(torch.ScalarType type) {
        return new TensorOptions(type).device(new DeviceOptional(device));
    }

    private record Rate(double perSecond, int repetitions) {
    }
}
