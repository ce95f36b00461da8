package dev.crucible.huggingface.template;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Jinja's built-in tests ({@code x is defined}, {@code x is string}, {@code x is equalto y}, ...). */
final class Tests {

    /** One test: the value left of {@code is} and the arguments after the test name. */
    @FunctionalInterface
    interface Test {
        boolean test(Object value, Arguments args);
    }

    private static final Map<String, Test> TESTS = new HashMap<>();

    static {
        TESTS.put("defined", (v, a) -> !(v instanceof Undefined));
        TESTS.put("undefined", (v, a) -> v instanceof Undefined);
        TESTS.put("none", (v, a) -> v == null);
        TESTS.put("boolean", (v, a) -> v instanceof Boolean);
        TESTS.put("true", (v, a) -> Boolean.TRUE.equals(v));
        TESTS.put("false", (v, a) -> Boolean.FALSE.equals(v));
        TESTS.put("integer", (v, a) -> Py.isInt(v));
        TESTS.put("float", (v, a) -> Py.isFloat(v));
        TESTS.put("number", (v, a) -> Py.isNumber(v));
        TESTS.put("string", (v, a) -> v instanceof String);
        TESTS.put("mapping", (v, a) -> v instanceof Map<?, ?>);
        // A string is iterable and a sequence, which is why Llama 3.2 JSON-quotes string tool results.
        TESTS.put("iterable", (v, a) -> Py.isIterable(v));
        TESTS.put("sequence", (v, a) -> v instanceof String || v instanceof List<?> || v instanceof Map<?, ?>
                || v instanceof Undefined);
        // Jinja's Undefined defines __call__ (to raise), so Python's callable() says yes.
        TESTS.put("callable", (v, a) -> v instanceof TemplateCallable || v instanceof Undefined);
        TESTS.put("escaped", (v, a) -> false);
        TESTS.put("lower", (v, a) -> PyStr.isLower(Py.str(v)));
        TESTS.put("upper", (v, a) -> PyStr.isUpper(Py.str(v)));
        TESTS.put("odd", (v, a) -> Py.eq(PyArithmetic.mod(v, 2L), 1L));
        TESTS.put("even", (v, a) -> Py.eq(PyArithmetic.mod(v, 2L), 0L));
        TESTS.put("divisibleby", (v, a) -> Py.eq(PyArithmetic.mod(v, one("divisibleby", a, "num")), 0L));
        TESTS.put("sameas", (v, a) -> {
            Object other = one("sameas", a, "other");
            return v == other || (v instanceof Boolean && v.equals(other))
                    || (v instanceof Undefined && other instanceof Undefined && v == other);
        });
        TESTS.put("in", (v, a) -> Py.contains(one("in", a, "seq"), v));
        Test eq = (v, a) -> Py.eq(v, one("eq", a, "b"));
        Test ne = (v, a) -> !Py.eq(v, one("ne", a, "b"));
        Test lt = (v, a) -> Py.compare("<", v, one("lt", a, "b"));
        Test le = (v, a) -> Py.compare("<=", v, one("le", a, "b"));
        Test gt = (v, a) -> Py.compare(">", v, one("gt", a, "b"));
        Test ge = (v, a) -> Py.compare(">=", v, one("ge", a, "b"));
        for (String name : new String[] {"==", "eq", "equalto"}) {
            TESTS.put(name, eq);
        }
        for (String name : new String[] {"!=", "ne"}) {
            TESTS.put(name, ne);
        }
        for (String name : new String[] {"<", "lt", "lessthan"}) {
            TESTS.put(name, lt);
        }
        for (String name : new String[] {"<=", "le"}) {
            TESTS.put(name, le);
        }
        for (String name : new String[] {">", "gt", "greaterthan"}) {
            TESTS.put(name, gt);
        }
        for (String name : new String[] {">=", "ge"}) {
            TESTS.put(name, ge);
        }
        TESTS.put("filter", (v, a) -> v instanceof String name && Filters.get(name) != null);
        TESTS.put("test", (v, a) -> v instanceof String name && TESTS.containsKey(name));
    }

    private Tests() {
    }

    /** The test of that name, or null when Jinja has none. */
    static Test get(String name) {
        return TESTS.get(name);
    }

    /** Runs test {@code name} as {@code select}/{@code selectattr} do; an unknown name is an error. */
    static boolean run(String name, Object value, Arguments args) {
        Test test = TESTS.get(name);
        if (test == null) {
            throw ChatTemplateException.runtime("TemplateRuntimeError", "No test named " + Py.repr(name) + ".");
        }
        return test.test(value, args);
    }

    private static Object one(String test, Arguments args, String parameter) {
        return args.bind(test, new String[] {parameter}, Arguments.REQUIRED)[0];
    }
}
