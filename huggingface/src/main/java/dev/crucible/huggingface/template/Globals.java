package dev.crucible.huggingface.template;

import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The functions every template can call: Jinja's {@code range}, {@code dict} and {@code namespace}, and the two
 * transformers adds, {@code raise_exception(message)} and {@code strftime_now(format)}.
 */
final class Globals {

    /** Jinja's sandbox refuses larger ranges. */
    private static final long MAX_RANGE = 100_000;

    private static final Map<String, TemplateCallable> FUNCTIONS = Map.of(
            "range", new Function("range", Globals::range),
            "dict", new Function("dict", Globals::dict),
            "namespace", new Function("namespace", Globals::namespace),
            "raise_exception", new Function("raise_exception", Globals::raiseException),
            "strftime_now", new Function("strftime_now", Globals::strftimeNow));

    private Globals() {
    }

    static Object get(String name) {
        return FUNCTIONS.get(name);
    }

    private static Object raiseException(RenderState state, Arguments args) {
        Object message = args.bind("raise_exception", new String[] {"message"}, Arguments.REQUIRED)[0];
        throw ChatTemplateException.raised(Py.str(message));
    }

    private static Object strftimeNow(RenderState state, Arguments args) {
        Object format = args.bind("strftime_now", new String[] {"format"}, Arguments.REQUIRED)[0];
        return Strftime.format(LocalDateTime.now(state.clock), PyMethods.string("strftime_now", format));
    }

    private static Object range(RenderState state, Arguments args) {
        if (!args.keywords().isEmpty()) {
            throw ChatTemplateException.typeError("range() takes no keyword arguments");
        }
        List<Object> bounds = args.positional();
        if (bounds.isEmpty() || bounds.size() > 3) {
            throw ChatTemplateException.typeError("range expected at most 3 arguments, got " + bounds.size());
        }
        long start = bounds.size() == 1 ? 0 : PyMethods.integer("range", bounds.get(0));
        long stop = PyMethods.integer("range", bounds.get(bounds.size() == 1 ? 0 : 1));
        long step = bounds.size() == 3 ? PyMethods.integer("range", bounds.get(2)) : 1;
        if (step == 0) {
            throw ChatTemplateException.valueError("range() arg 3 must not be zero");
        }
        long count = step > 0 ? Math.max(0, (stop - start + step - 1) / step)
                : Math.max(0, (start - stop - step - 1) / -step);
        if (count > MAX_RANGE) {
            throw ChatTemplateException.runtime("OverflowError",
                    "Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + MAX_RANGE + ").");
        }
        List<Object> values = new ArrayList<>((int) count);
        for (long i = 0; i < count; i++) {
            values.add(start + i * step);
        }
        return values;
    }

    private static Object dict(RenderState state, Arguments args) {
        Map<Object, Object> result = new LinkedHashMap<>();
        if (args.positional().size() > 1) {
            throw ChatTemplateException.typeError("dict expected at most 1 argument, got " + args.positional().size());
        }
        if (!args.positional().isEmpty()) {
            putAll(result, args.positional().get(0), "dict");
        }
        result.putAll(args.keywords());
        return result;
    }

    private static Object namespace(RenderState state, Arguments args) {
        Namespace namespace = new Namespace();
        if (args.positional().size() > 1) {
            throw ChatTemplateException.typeError("dict expected at most 1 argument, got " + args.positional().size());
        }
        if (!args.positional().isEmpty()) {
            Map<Object, Object> initial = new LinkedHashMap<>();
            putAll(initial, args.positional().get(0), "namespace");
            initial.forEach((key, value) -> namespace.set(Py.str(key), value));
        }
        args.keywords().forEach(namespace::set);
        return namespace;
    }

    /** dict(x): a mapping's entries, or an iterable of key/value pairs. */
    private static void putAll(Map<Object, Object> target, Object source, String function) {
        if (source instanceof Map<?, ?> map) {
            target.putAll(map);
            return;
        }
        for (Object pair : Py.iterate(source)) {
            List<?> items = Py.iterate(pair);
            if (items.size() != 2) {
                throw ChatTemplateException.valueError(function + " update sequence element has length "
                        + items.size() + "; 2 is required");
            }
            Py.requireHashable(items.get(0));
            target.put(items.get(0), items.get(1));
        }
    }

    @FunctionalInterface
    private interface Body {
        Object call(RenderState state, Arguments args);
    }

    private record Function(String name, Body body) implements TemplateCallable {
        @Override
        public Object call(RenderState state, Arguments arguments) {
            return body.call(state, arguments);
        }
    }
}
