package dev.crucible.accelerator.xla.pjrt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.api.UserInputException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ClientOptionsTest {
    @Test
    void eachSpellingGivesItsPjrtType() {
        assertEquals(List.of(new NamedValue.Bool("preallocate", false), new NamedValue.Float32("memory_fraction", 0.7f),
                        new NamedValue.Int64("collective_memory_size", 1048576),
                        new NamedValue.Int64List("visible_devices", List.of(0L, 1L)),
                        new NamedValue.Int64List("one_device", List.of(3L)),
                        new NamedValue.Text("allocator", "bfc"), new NamedValue.Text("ml_framework_version", "1"),
                        new NamedValue.Int64List("none", List.of())),
                ClientOptions.parse("test", " preallocate=false; memory_fraction=0.7;collective_memory_size=1048576;"
                        + "visible_devices=0,1;one_device=[3];allocator=bfc;ml_framework_version=\"1\";none=[];"));
    }

    @Test
    void theEnvironmentVariableIsRead() {
        assertEquals(List.of(new NamedValue.Bool("preallocate", false), new NamedValue.Float32("memory_fraction", 0.7f)),
                ClientOptions.fromEnvironment(Map.of("CRUCIBLE_PJRT_OPTIONS", "preallocate=false;memory_fraction=0.7")));
        assertEquals(List.of(), ClientOptions.fromEnvironment(Map.of()));
    }

    @Test
    void malformedOptionsAreOneLineUserErrors() {
        assertEquals("CRUCIBLE_PJRT_OPTIONS: 'preallocate' is not name=value (example: preallocate=false;memory_fraction=0.7)",
                assertThrows(UserInputException.class, () -> ClientOptions.parse(ClientOptions.ENV, "preallocate")).getMessage());
        assertEquals("CRUCIBLE_PJRT_OPTIONS: option a is given twice",
                assertThrows(UserInputException.class, () -> ClientOptions.parse(ClientOptions.ENV, "a=1;a=2")).getMessage());
        assertEquals("CRUCIBLE_PJRT_OPTIONS: '1x' is not an option name",
                assertThrows(UserInputException.class, () -> ClientOptions.parse(ClientOptions.ENV, "1x=2")).getMessage());
    }
}
