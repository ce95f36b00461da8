package dev.crucible.accelerator.xla;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.accelerator.xla.exec.CompiledProgram;
import dev.crucible.accelerator.xla.exec.DeviceArray;
import dev.crucible.accelerator.xla.exec.JaxCpuExecutor;
import dev.crucible.accelerator.xla.exec.OutOfDeviceMemoryException;
import dev.crucible.accelerator.xla.exec.Program;
import dev.crucible.accelerator.xla.exec.XlaExecutor;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.ShardRequest;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A batch that runs out of device memory is halved and run again; the size that worked is said. */
class XlaModelBatchingTest {

    /** jaxlib with a device that holds at most {@code rows} prompts of a batch (any [rows, tokens] integer input). */
    private record Limited(XlaExecutor delegate, int rows) implements XlaExecutor {
        @Override
        public String platform() {
            return delegate.platform();
        }

        @Override
        public int deviceCount() {
            return delegate.deviceCount();
        }

        @Override
        public CompiledProgram compile(Program program) {
            return delegate.compile(program);
        }

        @Override
        public DeviceArray upload(HostTensor tensor, int device) {
            return delegate.upload(tensor, device);
        }

        @Override
        public List<List<DeviceArray>> execute(CompiledProgram program, List<List<DeviceArray>> arguments) {
            for (DeviceArray argument : arguments.getFirst()) {
                if (argument.dtype() == DType.I64 && argument.shape().length == 2 && argument.shape()[0] > rows) {
                    throw new OutOfDeviceMemoryException("out of device memory: RESOURCE_EXHAUSTED: a batch of "
                            + argument.shape()[0] + " (stand-in for a small device)", null);
                }
            }
            return delegate.execute(program, arguments);
        }

        @Override
        public HostTensor download(DeviceArray array, String name, Arena into) {
            return delegate.download(array, name, into);
        }

        @Override
        public void close() {
            delegate.close();
        }
    }

    @Test
    void halvesUntilTheBatchFitsAndGivesTheSameIds() {
        GoldenFixture fixture = GoldenFixture.load("stories260k");
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            prompts.add(fixture.cases().get(i % fixture.cases().size()).promptIds());
        }
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        try (JaxCpuExecutor jax = JaxCpuExecutor.start(1);
             Checkpoint checkpoint = Checkpoint.open(fixture.directory())) {
            XlaEnvironment environment = new XlaEnvironment(DeviceRequest.parse("xla"), () -> new Limited(jax, 2),
                    OptionalInt.of(1), "fsdp");
            try (XlaModel model = XlaModel.place(environment, new ShardRequest(fixture.config(), checkpoint, DType.F32),
                    new PrintStream(said, true, StandardCharsets.UTF_8))) {
                List<Generation> generations = model.decode(new DecodeRequest(prompts, 16, Set.of(), 0, 0)).generations();
                for (int i = 0; i < prompts.size(); i++) {
                    GoldenFixture.Case golden = fixture.cases().get(i % fixture.cases().size());
                    assertArrayEquals(Arrays.copyOf(golden.generatedIds(), 16), generations.get(i).tokens());
                }
                assertEquals("""
                        xla: batches of 8 prompts ran out of device memory; trying 4
                        xla: batches of 4 prompts ran out of device memory; trying 2
                        xla: batches of 2 prompts fit in device memory
                        """, said.toString(StandardCharsets.UTF_8));
                // A request for one prompt per batch that still does not fit is the user's to act on.
                XlaEnvironment tiny = new XlaEnvironment(DeviceRequest.parse("xla"), () -> new Limited(jax, 0),
                        OptionalInt.of(1), "fsdp");
                try (XlaModel none = XlaModel.place(tiny, new ShardRequest(fixture.config(), checkpoint, DType.F32),
                        new PrintStream(said, true, StandardCharsets.UTF_8))) {
                    OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class,
                            () -> none.decode(new DecodeRequest(prompts.subList(0, 1), 4, Set.of(), 0, 0)));
                    assertEquals("out of device memory: RESOURCE_EXHAUSTED: a batch of 1 (stand-in for a small device)",
                            e.getMessage());
                }
            }
        }
    }

    /**
     * A stop condition on a compiled backend: the row it settles ends with the tokens it had (the batch keeps its
     * shape), the others run on, and the copies that fill the last batch never reach the caller's condition.
     */
    @Test
    void aStopConditionEndsItsRowAndNeverSeesTheFillingCopies() {
        GoldenFixture fixture = GoldenFixture.load("stories260k");
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            prompts.add(fixture.cases().get(i % fixture.cases().size()).promptIds());
        }
        List<Integer> asked = Collections.synchronizedList(new ArrayList<>());
        try (JaxCpuExecutor jax = JaxCpuExecutor.start(1);
             Checkpoint checkpoint = Checkpoint.open(fixture.directory())) {
            XlaEnvironment environment = new XlaEnvironment(DeviceRequest.parse("xla"), () -> jax, OptionalInt.of(1),
                    "fsdp");
            try (XlaModel model = XlaModel.place(environment, new ShardRequest(fixture.config(), checkpoint, DType.F32),
                    new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8))) {
                List<Generation> generations = model.decode(new DecodeRequest(prompts, 12, Set.of(), 0, 4)
                        .withStopCondition((prompt, tokens) -> {
                            asked.add(prompt);
                            return prompt == 1 && tokens.length == 3;
                        })).generations();
                assertEquals(3, generations.size());
                for (int i = 0; i < 3; i++) {
                    int[] golden = fixture.cases().get(i % fixture.cases().size()).generatedIds();
                    assertArrayEquals(Arrays.copyOf(golden, i == 1 ? 3 : 12), generations.get(i).tokens(), "prompt " + i);
                }
            }
        }
        assertEquals(Set.of(0, 1, 2), Set.copyOf(asked), "the caller's prompts only");
    }
}
