package dev.crucible.accelerator.xla.pjrt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A {@code PJRT_NamedValue}: how PJRT passes client and topology options and returns plugin attributes. The five
 * kinds are the C API's ({@code kString}, {@code kInt64}, {@code kInt64List}, {@code kFloat}, {@code kBool}).
 */
public sealed interface NamedValue {
    String name();

    /** The value as a user would write it in {@code CRUCIBLE_PJRT_OPTIONS}. */
    String valueText();

    record Text(String name, String value) implements NamedValue {
        public Text {
            Objects.requireNonNull(name, "name is null");
            Objects.requireNonNull(value, "value is null");
        }

        @Override
        public String valueText() {
            return value;
        }
    }

    record Int64(String name, long value) implements NamedValue {
        public Int64 {
            Objects.requireNonNull(name, "name is null");
        }

        @Override
        public String valueText() {
            return Long.toString(value);
        }
    }

    record Int64List(String name, List<Long> values) implements NamedValue {
        public Int64List {
            Objects.requireNonNull(name, "name is null");
            values = List.copyOf(values);
        }

        @Override
        public String valueText() {
            return values.toString().replace(" ", "");
        }
    }

    record Float32(String name, float value) implements NamedValue {
        public Float32 {
            Objects.requireNonNull(name, "name is null");
        }

        @Override
        public String valueText() {
            return Float.toString(value);
        }
    }

    record Bool(String name, boolean value) implements NamedValue {
        public Bool {
            Objects.requireNonNull(name, "name is null");
        }

        @Override
        public String valueText() {
            return Boolean.toString(value);
        }
    }

    int STRING = 0;
    int INT64 = 1;
    int INT64_LIST = 2;
    int FLOAT = 3;
    int BOOL = 4;

    /** Lays {@code values} out as a {@code PJRT_NamedValue[]} in {@code arena} (NULL for none). */
    static MemorySegment encode(Arena arena, List<NamedValue> values) {
        if (values.isEmpty()) {
            return MemorySegment.NULL;
        }
        Struct layout = Slot.NAMED_VALUE;
        MemorySegment array = layout.allocateArray(arena, values.size());
        for (int i = 0; i < values.size(); i++) {
            MemorySegment element = layout.element(array, i);
            NamedValue value = values.get(i);
            byte[] name = value.name().getBytes(StandardCharsets.UTF_8);
            layout.set(element, "name", PjrtApi.bytes(arena, name));
            layout.set(element, "name_size", name.length);
            switch (value) {
                case Text t -> {
                    byte[] text = t.value().getBytes(StandardCharsets.UTF_8);
                    layout.set(element, "type", STRING);
                    layout.set(element, "value", PjrtApi.bytes(arena, text));
                    layout.set(element, "value_size", text.length);
                }
                case Int64 n -> {
                    layout.set(element, "type", INT64);
                    layout.set(element, "value", n.value());
                    layout.set(element, "value_size", 1);
                }
                case Int64List l -> {
                    MemorySegment longs = arena.allocate(ValueLayout.JAVA_LONG, Math.max(1, l.values().size()));
                    for (int j = 0; j < l.values().size(); j++) {
                        longs.setAtIndex(ValueLayout.JAVA_LONG, j, l.values().get(j));
                    }
                    layout.set(element, "type", INT64_LIST);
                    layout.set(element, "value", longs);
                    layout.set(element, "value_size", l.values().size());
                }
                case Float32 f -> {
                    layout.set(element, "type", FLOAT);
                    layout.setFloat(element, "value", f.value());
                    layout.set(element, "value_size", 1);
                }
                case Bool b -> {
                    layout.set(element, "type", BOOL);
                    layout.set(element, "value", b.value() ? 1 : 0);
                    layout.set(element, "value_size", 1);
                }
            }
        }
        return array;
    }

    /** Reads a plugin-owned {@code PJRT_NamedValue[]} of {@code count} elements. */
    static List<NamedValue> decode(MemorySegment array, long count) {
        if (count == 0) {
            return List.of();
        }
        Struct layout = Slot.NAMED_VALUE;
        MemorySegment all = array.reinterpret(layout.stride() * count);
        List<NamedValue> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            MemorySegment element = layout.element(all, i);
            String name = PjrtApi.string(layout.getAddress(element, "name"), layout.getLong(element, "name_size"));
            long size = layout.getLong(element, "value_size");
            int type = layout.getInt(element, "type");
            out.add(switch (type) {
                case STRING -> new Text(name, PjrtApi.string(layout.getAddress(element, "value"), size));
                case INT64 -> new Int64(name, layout.getLong(element, "value"));
                case INT64_LIST -> {
                    MemorySegment longs = layout.getAddress(element, "value").reinterpret(8 * size);
                    yield new Int64List(name, Arrays.stream(longs.toArray(ValueLayout.JAVA_LONG)).boxed().toList());
                }
                case FLOAT -> new Float32(name, layout.getFloat(element, "value"));
                case BOOL -> new Bool(name, (layout.getLong(element, "value") & 0xFF) != 0);
                default -> new Text(name, "<value of unknown type " + type + ">");
            });
        }
        return out;
    }
}
