package dev.crucible.accelerator.cpu.kernels;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import dev.crucible.torch.HostKernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * The CPU backend's own kernels, written with the JDK Vector API ({@code jdk.incubator.vector}, which must be loaded
 * before this class is: see {@code VectorApiModule}). They take what libtorch's CPU build does worst on
 * a decode step: products of a few activation rows with a weight matrix, which must run at memory bandwidth.
 * Large weights are split into tasks of consecutive output rows shared by the {@link WorkerPool}; small ones run
 * on the calling thread, where waking helpers would cost more than the work.
 */
public final class VectorKernels implements HostKernels {
    /** At most this many float32 activation rows per product: past it libtorch's GEMM is the faster path. */
    static final int MAX_LINEAR_ROWS = 8;
    /**
     * The same for bfloat16, lower: libtorch's bf16 GEMM (native bf16 dot products) overtakes the kernels' widening
     * to float32 sooner. Decode of a Qwen2.5-0.5B-shaped model, two threads, ours against libtorch: batch 2 26.4
     * against 23.2 tokens/s, batch 4 34.4 against 31.9, batch 6 31.1 against 52.1, batch 8 40 against 68-76.
     */
    static final int MAX_BF16_LINEAR_ROWS = 4;
    /** At most this many query tokens per attention: past it (a prefill) libtorch's kernel is the faster path. */
    static final int MAX_ATTENTION_QUERIES = 8;
    /** Multiply-adds (keys × width × heads) below which an attention runs on the calling thread alone. */
    private static final long PARALLEL_ATTENTION_WORK = 32 << 10;
    /**
     * Weight bytes per task: enough to amortize taking a task and to keep each thread's read one long stream (every
     * jump to a new task restarts the core's prefetchers), small enough to balance threads. Measured, bf16 decode of
     * a Qwen2.5-0.5B-shaped model on two threads: 64 KiB tasks 23.7-24.8 tokens/s, 256 KiB 31.2-31.6, 1 MiB
     * 27.8-33.0 (0.51-0.78 of the bandwidth ceiling against 0.38-0.65 for 64 KiB), 4 MiB no better.
     */
    private static final int TASK_BYTES = 1 << 20;
    /** Below this many weight bytes a product runs on the calling thread alone. */
    private static final long PARALLEL_BYTES = 256 << 10;

    /** Elements per task of an elementwise kernel (RMSNorm, gated SiLU, rotary). */
    private static final int ELEMENTS_PER_TASK = 16 << 10;
    /** Below this many elements an elementwise kernel runs on the calling thread alone. */
    private static final long PARALLEL_ELEMENTS = 64 << 10;

    private final WorkerPool pool;
    /**
     * Inputs widened to float32 for the products: native memory, reused, one per calling thread (a backend may run
     * several batches at once, each on its own thread). Accessed through a global-scope view: a shared arena's
     * segment checks the arena is alive on every load, which costs bandwidth in the inner loop. The owner keeps the
     * memory alive; the garbage collector frees it with the thread's holder.
     */
    private static final class Widened {
        MemorySegment owner = MemorySegment.NULL;
        MemorySegment view = MemorySegment.NULL;
    }

    private final ThreadLocal<Widened> widened = ThreadLocal.withInitial(Widened::new);
    /** The input of a quantized product as {@link QuantizedMatVec} lays it out; as {@link #widened}. */
    private final ThreadLocal<Widened> prepared = ThreadLocal.withInitial(Widened::new);

    /** Machine code for what the Vector API cannot express, or null where this machine cannot run it. */
    private final MachineCode machine;

    /** Whether libtorch's bfloat16 matrix product is fast here (bf16 dot products in hardware); else see gemmDtype. */
    private final boolean bf16Gemm;

    /** Kernels for both float32 and bfloat16 tensors, warmed up for both, without machine code. */
    public VectorKernels(int threads) {
        this(threads, List.of(DType.F32, DType.BF16), null, true);
    }

    /**
     * Kernels warmed up for the dtypes a model computes in. Warming up only those matters: the JIT compiles a kernel
     * for the branches it has seen taken, and a float32 decode whose attention had also seen bfloat16 tensors during
     * the warm-up ran 1.4x slower than one that had not (both kernels work for either dtype regardless).
     */
    public VectorKernels(int threads, List<DType> warmFor, MachineCode machine) {
        this(threads, warmFor, machine, true);
    }

    /**
     * As above; {@code bf16Gemm} false on a CPU without bf16 dot products, where libtorch's bfloat16 matrix product
     * ran at a third of its float32 one (Qwen2.5-0.5B shape, one thread, 128-token prefill: 31.6 against 86.9
     * tokens/s), so products this class does not take run in float32 instead ({@link #gemmDtype}).
     */
    public VectorKernels(int threads, List<DType> warmFor, MachineCode machine, boolean bf16Gemm) {
        this.pool = new WorkerPool(threads);
        this.machine = machine;
        this.bf16Gemm = bf16Gemm;
        List<Boolean> bf16 = warmFor.stream().filter(d -> d == DType.F32 || d == DType.BF16).map(d -> d == DType.BF16)
                .distinct().toList();
        Thread.ofPlatform().daemon().name("crucible-cpu-kernel-warm-up").start(() -> {
            try {
                WarmUp.run(bf16);
            } catch (NoClassDefFoundError e) {
                // The runner closed this plugin's class loader while the warm-up still loaded kernel classes: it is
                // exiting early (a usage error found after the model opened), and a trace would be a second line.
            }
        });
    }

    public int threads() {
        return pool.threads();
    }

    @Override
    public DType gemmDtype(DType dtype) {
        return dtype == DType.BF16 && !bf16Gemm ? DType.F32 : dtype;
    }

    @Override
    public boolean takesLinear(WeightFormat weight, DType dtype, long rows, long in, long out) {
        int maxRows = dtype == DType.BF16 ? MAX_BF16_LINEAR_ROWS : MAX_LINEAR_ROWS;
        return weight instanceof WeightFormat.Dense dense && dense.dtype() == dtype
                && (dtype == DType.F32 || dtype == DType.BF16) && rows >= 1 && rows <= maxRows
                && in * rows <= Integer.MAX_VALUE && out * rows <= Integer.MAX_VALUE;
    }

    @Override
    public void linear(DType dtype, MemorySegment x, MemorySegment weight, MemorySegment bias, MemorySegment y,
                       int rows, int in, int out) {
        boolean bf16 = dtype == DType.BF16;
        int bytes = bf16 ? 2 : 4;
        long rowBytes = (long) in * bytes;
        if (bf16 && rows == 1 && machine != null && machine.bf16()) {
            // vdpbf16ps takes the bfloat16 input as it is: no widening, and the product runs at the read's speed.
            overRows(out, rowBytes, (from, count) -> machine.bf16Rows(weight.asSlice(rowBytes * from), x,
                    y.asSlice(2L * from), sliced(bias, 2L * from), in, count));
            return;
        }
        if (bf16 && rows == 1 && machine != null) {
            // Without AVX512-BF16: the input widened once per product, each weight vector in two instructions. The
            // Vector API's widening loop is bound by its arithmetic at one thread; this one by the read.
            MemorySegment input = widenInput(x, in, true);
            overRows(out, rowBytes, (from, count) -> machine.bf16RowsF32x(weight.asSlice(rowBytes * from), input,
                    y.asSlice(2L * from), sliced(bias, 2L * from), in, count));
            return;
        }
        if (!bf16 && rows == 1 && machine != null) {
            overRows(out, rowBytes, (from, count) -> machine.f32Rows(weight.asSlice(rowBytes * from), x,
                    y.asSlice(4L * from), sliced(bias, 4L * from), in, count));
            return;
        }
        if (bf16 && rows <= MachineCode.MAX_BATCH && machine != null && machine.bf16()) {
            // The rows share every load of the weights; their inputs interleaved by vector, as the code reads them.
            MemorySegment xs = buffer(widened, MachineCode.interleavedBytes(rows, in, 2));
            MachineCode.interleave(x, rows, in, 2, xs);
            overRows(out, rowBytes, (from, count) -> machine.bf16Batch(weight.asSlice(rowBytes * from), xs,
                    y.asSlice(2L * from), sliced(bias, 2L * from), in, count, out, rows));
            return;
        }
        if (!bf16 && rows <= MachineCode.MAX_F32_BATCH && machine != null) {
            // Each weight vector loaded once for all rows (abliteration trials decode 8 rows at a time); the Java
            // loop reloaded every row's inputs for each weight vector and summed each output's lanes on its own.
            MemorySegment xs = buffer(widened, MachineCode.interleavedBytes(rows, in, 4));
            MachineCode.interleave(x, rows, in, 4, xs);
            overRows(out, rowBytes, (from, count) -> machine.f32Batch(weight.asSlice(rowBytes * from), xs,
                    y.asSlice(4L * from), sliced(bias, 4L * from), in, count, out, rows));
            return;
        }
        MemorySegment input = widenInput(x, rows * in, bf16);
        overRows(out, rowBytes, (from, count) -> MatVec.rows(bf16, weight, input, bias, y, rows, in, out, from,
                from + count));
    }

    /**
     * Runs {@code body} over the output rows {@code [0, out)} of a weight of {@code rowBytes} per row: in one pass on
     * the calling thread when the weight is small or there is no helper (no task to share), else in tasks of
     * {@link #TASK_BYTES} shared with the pool.
     */
    private void overRows(int out, long rowBytes, Chunk body) {
        if (rowBytes * out < PARALLEL_BYTES || pool.threads() == 1) {
            body.run(0, out);
            return;
        }
        int rowsPerTask = (int) Math.max(1, TASK_BYTES / rowBytes);
        // Whole blocks of eight where a task has them: long rows go eight at a time (MachineCode.LONG_INPUT_BYTES),
        // and a task's last few rows would otherwise take the slower one-row kernel.
        inChunks(out, rowsPerTask >= 8 ? rowsPerTask & -8 : rowsPerTask, body);
    }

    /** {@code segment} from byte {@code offset} on, or null for null (an absent bias). */
    private static MemorySegment sliced(MemorySegment segment, long offset) {
        return segment == null ? null : segment.asSlice(offset);
    }

    @Override
    public void rmsNorm(DType dtype, MemorySegment x, MemorySegment weight, MemorySegment y, int rows, int width,
                        double eps) {
        boolean bf16 = dtype == DType.BF16;
        if ((long) rows * width < PARALLEL_ELEMENTS) {
            TokenOps.rmsNorm(bf16, x, weight, y, rows, width, eps);
            return;
        }
        long rowBytes = (bf16 ? 2L : 4L) * width;
        inChunks(rows, Math.max(1, ELEMENTS_PER_TASK / width), (from, count) -> {
            long offset = rowBytes * from;
            long length = rowBytes * count;
            TokenOps.rmsNorm(bf16, x.asSlice(offset, length), weight, y.asSlice(offset, length), count, width, eps);
        });
    }

    @Override
    public void gatedSilu(DType dtype, MemorySegment gate, MemorySegment up, MemorySegment y, int count) {
        boolean bf16 = dtype == DType.BF16;
        if (count < PARALLEL_ELEMENTS) {
            TokenOps.gatedSilu(bf16, gate, up, y, count);
            return;
        }
        long bytes = bf16 ? 2 : 4;
        inChunks(count, ELEMENTS_PER_TASK, (from, n) -> {
            long offset = bytes * from;
            long length = bytes * n;
            TokenOps.gatedSilu(bf16, gate.asSlice(offset, length), up.asSlice(offset, length), y.asSlice(offset, length), n);
        });
    }

    /** Work on units {@code [from, from + count)}. */
    private interface Chunk {
        void run(int from, int count);
    }

    /**
     * Runs {@code body} over {@code units} independent units in chunks of {@code unitsPerTask}, shared with the pool.
     * For a prefill's many rows: the helpers would otherwise idle while the calling thread works through every row.
     * Calls below {@link #PARALLEL_ELEMENTS} (a decode step's) do not come here; they run inline and allocate nothing.
     */
    private void inChunks(int units, int unitsPerTask, Chunk body) {
        pool.run((units + unitsPerTask - 1) / unitsPerTask, task -> {
            int from = task * unitsPerTask;
            body.run(from, Math.min(units - from, unitsPerTask));
        });
    }

    @Override
    public void rotary(DType dtype, MemorySegment x, long[] xStrides, MemorySegment cos, MemorySegment sin,
                       MemorySegment y, int batch, int heads, int tokens, int width) {
        boolean bf16 = dtype == DType.BF16;
        int units = batch * heads;
        if ((long) units * tokens * width < PARALLEL_ELEMENTS) {
            TokenOps.rotary(bf16, x, xStrides, cos, sin, y, batch, heads, tokens, width);
            return;
        }
        // One task per (batch row, head): the input's offset follows its strides, the output is contiguous and the
        // cos/sin tables ([B, 1, T, D]) are per batch row.
        long bytes = bf16 ? 2 : 4;
        pool.run(units, unit -> {
            int b = unit / heads;
            int h = unit % heads;
            long table = bytes * b * tokens * width;
            TokenOps.rotary(bf16, x.asSlice(bytes * (b * xStrides[0] + h * xStrides[1])), xStrides,
                    cos.asSlice(table), sin.asSlice(table), y.asSlice(bytes * unit * tokens * width), 1, 1, tokens, width);
        });
    }

    @Override
    public boolean takesAttention(DType dtype, long batch, long queryHeads, long queries, long keys, long width) {
        return (dtype == DType.F32 || dtype == DType.BF16) && queries <= MAX_ATTENTION_QUERIES
                && batch * queryHeads * queries <= Integer.MAX_VALUE;
    }

    @Override
    public void attention(DType dtype, MemorySegment q, long[] qStrides, MemorySegment k, long[] kStrides,
                          MemorySegment v, long[] vStrides, MemorySegment allowed, long[] maskStrides, MemorySegment y,
                          int batch, int queryHeads, int kvHeads, int queries, int keys, int width, double scale) {
        DecodeAttention attention = new DecodeAttention(dtype == DType.BF16, q, qStrides, k, kStrides, v, vStrides,
                allowed, maskStrides, y, queryHeads, kvHeads, queries, keys, width, scale);
        int units = batch * queries * queryHeads;
        long work = (long) units * keys * width;
        if (work < PARALLEL_ATTENTION_WORK) {
            for (int unit = 0; unit < units; unit++) {
                attention.unit(unit);
            }
        } else {
            pool.run(units, attention::unit);
        }
    }

    @Override
    public void argmax(DType dtype, MemorySegment x, MemorySegment y, int rows, int width) {
        TokenOps.argmax(dtype == DType.BF16, x, y, rows, width);
    }

    /** At most this many activation rows per quantized product: past it, dequantize once and use libtorch's GEMM. */
    static final int MAX_QUANTIZED_ROWS = 8;

    @Override
    public boolean takesQuantizedLinear(WeightFormat weight, DType dtype, long rows, long in, long out) {
        if (weight instanceof WeightFormat.Nf4 nf4) {
            // NF4 has no Vector API kernel: up to 8 rows in machine code, one pass over the codes per row (still
            // several times faster than dequantizing the weight with libtorch ops for every product), anything
            // else dequantized by libtorch ops.
            return machine != null && rows >= 1 && rows <= MAX_QUANTIZED_ROWS
                    && (dtype == DType.F32 || dtype == DType.BF16)
                    && in <= Integer.MAX_VALUE && out * rows <= Integer.MAX_VALUE
                    && MachineCode.takesNibbles((int) in, nf4.blockSize());
        }
        return weight instanceof WeightFormat.Int && (dtype == DType.F32 || dtype == DType.BF16) && rows >= 1
                && rows <= MAX_QUANTIZED_ROWS && in * rows <= Integer.MAX_VALUE / 2 && out * rows <= Integer.MAX_VALUE;
    }

    @Override
    public void quantizedLinear(WeightFormat weight, DType dtype, MemorySegment x, MemorySegment codes,
                                MemorySegment scales, MemorySegment zeroPoints, MemorySegment bias, MemorySegment y,
                                int rows, int in, int out) {
        boolean bf16 = dtype == DType.BF16;
        if (weight instanceof WeightFormat.Nf4 nf4) {
            // takesQuantizedLinear took it only where the machine code is loaded.
            long bytes = bf16 ? 2 : 4;
            for (int row = 0; row < rows; row++) {
                nibbles(machine, true, nf4.blockSize(), x.asSlice(bytes * row * in, bytes * in), codes, scales, bias,
                        y.asSlice(bytes * row * out, bytes * out), bf16, in, out);
            }
            return;
        }
        WeightFormat.Int format = (WeightFormat.Int) weight;
        int bits = format.bits();
        int block = block(format, in);
        if (machine != null && bits == 4 && zeroPoints == null && rows == 1 && MachineCode.takesNibbles(in, block)) {
            nibbles(machine, false, block, x, codes, scales, bias, y, bf16, in, out);
            return;
        }
        long rowBytes = format.rowBytes(in);
        long outBytes = bf16 ? 2 : 4;
        int groups = in / block;
        boolean oneSymmetricInt8Row = machine != null && bits == 8 && zeroPoints == null && rows == 1;
        if (oneSymmetricInt8Row && MachineCode.takesInt8X16(in, block)) {
            // The input as 16-bit integers (a scale per 128 columns, once per product, not per task): integer
            // products (vpdpwssd) need a third of the instructions of widening every code to float32, which kept
            // the float32 kernel at 0.6 of the read; the input's error (at most 1/65534 of its block's largest
            // element) stays far below the codes' own (1/254 of the row's).
            MemorySegment xq = buffer(prepared, MachineCode.x16Bytes(in));
            machine.quantizeX16(x, xq, bf16, in);
            overRows(out, rowBytes, (from, count) -> machine.int8RowsX16(codes.asSlice(rowBytes * from), xq,
                    y.asSlice(outBytes * from), scales.asSlice(4L * groups * from), sliced(bias, outBytes * from), bf16,
                    in, block, count));
            return;
        }
        boolean sums = bits == 8 && zeroPoints != null;
        MemorySegment input = widenInput(x, rows * in, bf16);
        QuantizedMatVec.Input laidOut = bits == 8 && !sums
                ? new QuantizedMatVec.Input(input, null, rows, in, in, (in + block - 1) / block, block)
                : QuantizedMatVec.prepare(input, buffer(prepared, 4 * QuantizedMatVec.scratchFloats(bits, rows, in,
                        block, sums)), bits, rows, in, block, sums);
        if (oneSymmetricInt8Row && MachineCode.takesInt8(in, block)) {
            overRows(out, rowBytes, (from, count) -> machine.int8Rows(codes.asSlice(rowBytes * from), laidOut.x(),
                    y.asSlice(outBytes * from), scales.asSlice(4L * groups * from), sliced(bias, outBytes * from), bf16,
                    in, block, count));
            return;
        }
        overRows(out, rowBytes, (from, count) -> {
            if (bits == 8) {
                QuantizedMatVec.int8(codes, scales, zeroPoints, laidOut, bias, bf16, y, out, from, from + count);
            } else {
                QuantizedMatVec.int4(codes, scales, zeroPoints, laidOut, bias, bf16, y, out, from, from + count);
            }
        });
    }

    /** One row of 4-bit codes (symmetric int4, or NF4) on {@link MachineCode#nibbleRows}. */
    private void nibbles(MachineCode code, boolean nf4, int block, MemorySegment x, MemorySegment codes, MemorySegment scales,
                         MemorySegment bias, MemorySegment y, boolean bf16, int in, int out) {
        MemorySegment input = widenInput(x, in, bf16);
        MemorySegment xs = buffer(prepared, 4L * in);
        MachineCode.splitColumns(input, in, !nf4, xs);
        long rowBytes = in / 2;
        int groups = in / block;
        long outBytes = bf16 ? 2 : 4;
        overRows(out, rowBytes, (from, count) -> code.nibbleRows(codes.asSlice(rowBytes * from), xs,
                y.asSlice(outBytes * from), scales.asSlice(4L * groups * from), sliced(bias, outBytes * from), bf16, nf4,
                in, block, count));
    }

    @Override
    public boolean takesDequantize(WeightFormat weight, DType dtype) {
        return weight instanceof WeightFormat.Int && (dtype == DType.F32 || dtype == DType.BF16);
    }

    @Override
    public void dequantize(WeightFormat weight, DType dtype, MemorySegment codes, MemorySegment scales,
                           MemorySegment zeroPoints, MemorySegment y, int rows, int in) {
        WeightFormat.Int format = (WeightFormat.Int) weight;
        int block = block(format, in);
        int rowsPerTask = Math.max(1, ELEMENTS_PER_TASK / in);
        inChunks(rows, rowsPerTask, (from, count) -> QuantizedMatVec.dequantize(format.bits(), codes, scales,
                zeroPoints, dtype == DType.BF16, y, in, block, from, from + count));
    }

    @Override
    public String describe(WeightFormat weight, DType dtype) {
        if (weight instanceof WeightFormat.Nf4 && machine != null) {
            return "products of up to " + MAX_QUANTIZED_ROWS + " rows in machine code (codes looked up in a register, "
                    + "one pass per row), longer ones dequantized by libtorch ops for libtorch's matrix product";
        }
        if (!takesDequantize(weight, dtype)) {
            return "dequantized by libtorch ops for each product, then libtorch's matrix product";
        }
        WeightFormat.Int format = (WeightFormat.Int) weight;
        String products = machine == null || format.zeroPoints() ? "products of up to "
                : format.bits() == 8 ? "one-row products in machine code (the input as 16-bit integers, VNNI "
                        + "vpdpwssd, where rows are whole multiples of 128), others of up to "
                : "one-row products in machine code, others of up to ";
        return products + MAX_QUANTIZED_ROWS + " rows on the vector API kernels (" + format.bits() + "-bit codes widened to float32 in "
                + QuantizedMatVec.FLOATS.vectorBitSize() + "-bit registers), longer ones dequantized to "
                + dtype.userName() + " by them for libtorch's matrix product";
    }

    /** Weights per scale; per channel, the row (rounded up to whole bytes for 4 bits). */
    private static int block(WeightFormat.Int format, int in) {
        if (format.blockSize() != 0) {
            return format.blockSize();
        }
        return format.bits() == 4 ? 2 * ((in + 1) / 2) : in;
    }

    /** Shuts the helper threads down. */
    public void close() {
        pool.close();
    }

    /** The calling thread's buffer of {@code holder}, at least {@code bytes} long (contents undefined). */
    private static MemorySegment buffer(ThreadLocal<Widened> holder, long bytes) {
        Widened buffer = holder.get();
        if (buffer.view.byteSize() < bytes) {
            buffer.owner = Arena.ofAuto().allocate(Math.max(bytes, 64 << 10), 64);
            buffer.view = MemorySegment.ofAddress(buffer.owner.address()).reinterpret(buffer.owner.byteSize());
        }
        return buffer.view;
    }

    private MemorySegment widenInput(MemorySegment source, int count, boolean bf16) {
        long bytes = 4L * count;
        MemorySegment scratch = buffer(widened, bytes);
        if (bf16) {
            for (int i = 0; i < count; i++) {
                scratch.setAtIndex(ValueLayout.JAVA_FLOAT, i,
                        MatVec.bf16ToFloat(source.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i)));
            }
        } else {
            MemorySegment.copy(source, 0, scratch, 0, bytes);
        }
        return scratch;
    }
}
