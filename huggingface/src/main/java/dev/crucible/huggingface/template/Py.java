package dev.crucible.huggingface.template;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Python's semantics for the Java values a template sees, as Jinja inherits them from Python.
 *
 * <p>Values are {@code String}, integers ({@code Long}; {@code Integer}, {@code Short}, {@code Byte} and
 * {@code BigInteger} from callers are accepted), floats ({@code Double}; {@code Float} and {@code BigDecimal}
 * accepted), {@code Boolean}, {@code List} (a {@link PyTuple} is a tuple), {@code Map} (iteration order is the
 * dict's order), {@code null} for None, {@link Undefined}, {@link Namespace}, {@link LoopContext},
 * {@link TemplateCallable}, and the lazy {@link PyIterator} and {@link PyView} that some filters and dict methods
 * return. Strings are indexed, sliced and measured in code points, as Python does.
 */
final class Py {

    private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

    /** Dict methods a template may call; attribute lookup prefers them over keys of the same name. */
    private static final Set<String> DICT_METHODS = Set.of("items", "keys", "values", "get", "copy");
    /** Mutating dict methods: the immutable sandbox refuses them. */
    private static final Set<String> DICT_UNSAFE = Set.of("clear", "pop", "popitem", "setdefault", "update");
    private static final Set<String> LIST_METHODS = Set.of("index", "count", "copy");
    private static final Set<String> LIST_UNSAFE = Set.of("append", "reverse", "insert", "sort", "extend", "remove",
            "pop", "clear");
    private static final Set<String> STR_METHODS = Set.of("startswith", "endswith", "strip", "lstrip", "rstrip", "split",
            "rsplit", "splitlines", "replace", "upper", "lower", "title", "capitalize", "swapcase", "casefold",
            "find", "rfind", "index", "rindex", "count", "join", "isdigit", "isdecimal", "isnumeric", "isalpha",
            "isalnum", "isspace", "islower", "isupper", "istitle", "zfill", "center", "ljust", "rjust",
            "partition", "rpartition", "removeprefix", "removesuffix", "format");

    private Py() {
    }

    // ---------------------------------------------------------------- types

    static boolean isInt(Object v) {
        return v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte
                || v instanceof BigInteger;
    }

    static boolean isFloat(Object v) {
        return v instanceof Double || v instanceof Float || v instanceof BigDecimal;
    }

    /** int, float or bool: Python's numbers.Number (bool is an int subclass). */
    static boolean isNumber(Object v) {
        return isInt(v) || isFloat(v) || v instanceof Boolean;
    }

    static long asLong(Object v) {
        if (v instanceof Boolean b) {
            return b ? 1 : 0;
        }
        if (v instanceof BigInteger big) {
            if (big.bitLength() > 63) {
                throw ChatTemplateException.runtime("OverflowError", "Python int too large for this operation");
            }
            return big.longValue();
        }
        return ((Number) v).longValue();
    }

    static double asDouble(Object v) {
        if (v instanceof Boolean b) {
            return b ? 1 : 0;
        }
        return ((Number) v).doubleValue();
    }

    static BigInteger asBig(Object v) {
        return v instanceof BigInteger big ? big : BigInteger.valueOf(asLong(v));
    }

    /** A Python int result: a Long when it fits, so that the common case stays cheap. */
    static Object normalize(BigInteger value) {
        return value.compareTo(LONG_MIN) >= 0 && value.compareTo(LONG_MAX) <= 0 ? (Object) value.longValue() : value;
    }

    static String typeName(Object v) {
        if (v == null) {
            return "NoneType";
        }
        if (v instanceof Boolean) {
            return "bool";
        }
        if (isInt(v)) {
            return "int";
        }
        if (isFloat(v)) {
            return "float";
        }
        if (v instanceof String) {
            return "str";
        }
        if (v instanceof PyTuple) {
            return "tuple";
        }
        if (v instanceof List) {
            return "list";
        }
        if (v instanceof Map) {
            return "dict";
        }
        if (v instanceof Undefined) {
            return "Undefined";
        }
        if (v instanceof Namespace) {
            return "Namespace";
        }
        if (v instanceof LoopContext) {
            return "LoopContext";
        }
        if (v instanceof PySlice) {
            return "slice";
        }
        if (v instanceof PyIterator iterator) {
            return iterator.typeName();
        }
        if (v instanceof PyView view) {
            return view.typeName();
        }
        if (v instanceof Macro) {
            return "Macro";
        }
        if (v instanceof TemplateCallable) {
            return "function";
        }
        return v.getClass().getSimpleName();
    }

    /** Jinja's object_type_repr, used in undefined-value messages: "dict object", "None". */
    static String objectTypeRepr(Object v) {
        if (v == null) {
            return "None";
        }
        if (v instanceof Namespace) {
            return "jinja2.utils.Namespace object";
        }
        if (v instanceof LoopContext) {
            return "jinja2.runtime.LoopContext object";
        }
        if (v instanceof Undefined) {
            return "jinja2.runtime.Undefined object";
        }
        return typeName(v) + " object";
    }

    // ---------------------------------------------------------------- truth and text

    static boolean truthy(Object v) {
        if (v == null || v instanceof Undefined) {
            return false;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        if (v instanceof String s) {
            return !s.isEmpty();
        }
        if (v instanceof Long l) {
            return l != 0;
        }
        if (isInt(v)) {
            return asBig(v).signum() != 0;
        }
        if (isFloat(v)) {
            return asDouble(v) != 0.0;
        }
        if (v instanceof List<?> list) {
            return !list.isEmpty();
        }
        if (v instanceof Map<?, ?> map) {
            return !map.isEmpty();
        }
        if (v instanceof LoopContext loop) {
            return loop.length() > 0;
        }
        if (v instanceof PyView view) {
            return view.size() > 0;
        }
        return true; // generators and iterators are true even when empty
    }

    /** Python's str(): what {@code {{ value }}} prints. */
    static String str(Object v) {
        if (v instanceof String s) {
            return s;
        }
        if (v instanceof Undefined) {
            return "";
        }
        return repr(v);
    }

    /** Python's repr(), used for the items of printed lists and dicts. */
    static String repr(Object v) {
        StringBuilder out = new StringBuilder();
        appendRepr(out, v);
        return out.toString();
    }

    private static void appendRepr(StringBuilder out, Object v) {
        if (v == null) {
            out.append("None");
        } else if (v instanceof String s) {
            appendStringRepr(out, s);
        } else if (v instanceof Boolean b) {
            out.append(b ? "True" : "False");
        } else if (isInt(v)) {
            out.append(v);
        } else if (isFloat(v)) {
            out.append(floatRepr(asDouble(v)));
        } else if (v instanceof PyTuple tuple) {
            out.append('(');
            for (int i = 0; i < tuple.size(); i++) {
                if (i > 0) {
                    out.append(", ");
                }
                appendRepr(out, tuple.get(i));
            }
            out.append(tuple.size() == 1 ? ",)" : ")");
        } else if (v instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    out.append(", ");
                }
                appendRepr(out, list.get(i));
            }
            out.append(']');
        } else if (v instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                if (!first) {
                    out.append(", ");
                }
                first = false;
                appendRepr(out, entry.getKey());
                out.append(": ");
                appendRepr(out, entry.getValue());
            }
            out.append('}');
        } else if (v instanceof Undefined) {
            out.append("Undefined");
        } else if (v instanceof Namespace ns) {
            out.append("<Namespace ");
            appendRepr(out, ns.attributes());
            out.append('>');
        } else if (v instanceof LoopContext loop) {
            out.append("<LoopContext ").append(loop.index0() + 1).append('/').append(loop.length()).append('>');
        } else if (v instanceof PySlice slice) {
            out.append("slice(").append(repr(slice.start())).append(", ").append(repr(slice.stop())).append(", ")
                    .append(repr(slice.step())).append(')');
        } else if (v instanceof PyIterator iterator) {
            out.append(iterator.repr());
        } else if (v instanceof PyView view) {
            out.append(view.typeName()).append('(');
            appendRepr(out, view.items());
            out.append(')');
        } else if (v instanceof BoundMethod method) {
            out.append("<built-in method ").append(method.method()).append(" of ").append(typeName(method.self()))
                    .append(" object>");
        } else if (v instanceof TemplateCallable callable) {
            out.append("<function ").append(callable.name()).append('>');
        } else {
            out.append(v);
        }
    }

    private static void appendStringRepr(StringBuilder out, String s) {
        char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        out.append(quote);
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == quote || cp == '\\') {
                out.append('\\').appendCodePoint(cp);
            } else if (cp == '\t') {
                out.append("\\t");
            } else if (cp == '\n') {
                out.append("\\n");
            } else if (cp == '\r') {
                out.append("\\r");
            } else if (cp == ' ' || isPrintable(cp)) {
                out.appendCodePoint(cp);
            } else if (cp < 0x100) {
                out.append(String.format("\\x%02x", cp));
            } else if (cp < 0x10000) {
                out.append(String.format("\\u%04x", cp));
            } else {
                out.append(String.format("\\U%08x", cp));
            }
        }
        out.append(quote);
    }

    /** Python's str.isprintable() for one code point (space separators other than ' ' are not printable). */
    private static boolean isPrintable(int cp) {
        return switch (Character.getType(cp)) {
            case Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE,
                 Character.UNASSIGNED, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                 Character.SPACE_SEPARATOR -> false;
            default -> true;
        };
    }

    /** Python's repr(float): the shortest round-tripping digits, exponent form below 1e-4 and from 1e16. */
    static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return (1 / d < 0) ? "-0.0" : "0.0";
        }
        // Java's Double.toString yields the shortest digits that round-trip, like Python's repr.
        BigDecimal exact = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
        String digits = exact.unscaledValue().toString();
        int decimalPoint = digits.length() - exact.scale();
        StringBuilder out = new StringBuilder();
        if (d < 0) {
            out.append('-');
        }
        if (decimalPoint > -4 && decimalPoint <= 16) {
            if (decimalPoint <= 0) {
                out.append("0.").append("0".repeat(-decimalPoint)).append(digits);
            } else if (decimalPoint >= digits.length()) {
                out.append(digits).append("0".repeat(decimalPoint - digits.length())).append(".0");
            } else {
                out.append(digits, 0, decimalPoint).append('.').append(digits, decimalPoint, digits.length());
            }
        } else {
            out.append(digits.charAt(0));
            if (digits.length() > 1) {
                out.append('.').append(digits, 1, digits.length());
            }
            int exponent = decimalPoint - 1;
            out.append('e').append(exponent < 0 ? '-' : '+');
            int magnitude = Math.abs(exponent);
            if (magnitude < 10) {
                out.append('0');
            }
            out.append(magnitude);
        }
        return out.toString();
    }

    // ---------------------------------------------------------------- equality and ordering

    static boolean eq(Object a, Object b) {
        if (a instanceof String sa) {
            return b instanceof String sb && sa.equals(sb);
        }
        if (isNumber(a) && isNumber(b)) {
            return compareNumbers(a, b) == 0 && !isNaN(a) && !isNaN(b);
        }
        if (a == b) {
            return true;
        }
        if (a == null || b == null) {
            return false;
        }
        if (a instanceof Undefined || b instanceof Undefined) {
            return a instanceof Undefined && b instanceof Undefined;
        }
        if (a instanceof List<?> la && b instanceof List<?> lb) {
            if ((a instanceof PyTuple) != (b instanceof PyTuple) || la.size() != lb.size()) {
                return false;
            }
            for (int i = 0; i < la.size(); i++) {
                Object x = la.get(i);
                Object y = lb.get(i);
                if (x != y && !eq(x, y)) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof PyView va && b instanceof PyView vb) {
            return va.sameAs(vb);
        }
        if (a instanceof Map<?, ?> ma && b instanceof Map<?, ?> mb) {
            if (ma.size() != mb.size()) {
                return false;
            }
            for (Map.Entry<?, ?> entry : ma.entrySet()) {
                Object key = entry.getKey();
                if (!mb.containsKey(key)) {
                    return false;
                }
                Object x = entry.getValue();
                Object y = mb.get(key);
                if (x != y && !eq(x, y)) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    private static boolean isNaN(Object v) {
        return (v instanceof Double d && d.isNaN()) || (v instanceof Float f && f.isNaN());
    }

    static int compareNumbers(Object a, Object b) {
        if (isFloat(a) || isFloat(b)) {
            double x = asDouble(a);
            double y = asDouble(b);
            return Double.compare(x == 0.0 ? 0.0 : x, y == 0.0 ? 0.0 : y);
        }
        if (a instanceof BigInteger || b instanceof BigInteger) {
            return asBig(a).compareTo(asBig(b));
        }
        return Long.compare(asLong(a), asLong(b));
    }

    /**
     * Python's ordering operators ({@code <}, {@code <=}, {@code >}, {@code >=}).
     *
     * @return the sign of a compared with b
     */
    static int order(String op, Object a, Object b) {
        if (a instanceof Undefined u) {
            throw u.error();
        }
        if (b instanceof Undefined u) {
            throw u.error();
        }
        if (isNumber(a) && isNumber(b)) {
            if (isNaN(a) || isNaN(b)) {
                return Integer.MIN_VALUE;
            }
            return compareNumbers(a, b);
        }
        if (a instanceof String sa && b instanceof String sb) {
            return PyStr.compare(sa, sb);
        }
        if (a instanceof List<?> la && b instanceof List<?> lb && (a instanceof PyTuple) == (b instanceof PyTuple)) {
            int n = Math.min(la.size(), lb.size());
            for (int i = 0; i < n; i++) {
                if (!eq(la.get(i), lb.get(i))) {
                    return order(op, la.get(i), lb.get(i));
                }
            }
            return Integer.compare(la.size(), lb.size());
        }
        throw ChatTemplateException.typeError("'" + op + "' not supported between instances of "
                + repr(typeName(a)) + " and " + repr(typeName(b)));
    }

    static boolean compare(String op, Object a, Object b) {
        return switch (op) {
            case "==" -> eq(a, b);
            case "!=" -> !eq(a, b);
            case "in" -> contains(b, a);
            case "not in" -> !contains(b, a);
            default -> {
                int sign = order(op, a, b);
                if (sign == Integer.MIN_VALUE) {
                    yield false; // NaN: every ordering comparison is false
                }
                yield switch (op) {
                    case "<" -> sign < 0;
                    case "<=" -> sign <= 0;
                    case ">" -> sign > 0;
                    case ">=" -> sign >= 0;
                    default -> throw new IllegalArgumentException(op);
                };
            }
        };
    }

    /** Python's {@code item in container}. */
    static boolean contains(Object container, Object item) {
        if (container instanceof String s) {
            if (item instanceof String sub) {
                return s.contains(sub);
            }
            throw ChatTemplateException.typeError("'in <string>' requires string as left operand, not "
                    + typeName(item));
        }
        if (container instanceof List<?> list) {
            for (Object element : list) {
                if (element == item || eq(element, item)) {
                    return true;
                }
            }
            return false;
        }
        if (container instanceof Map<?, ?> map) {
            requireHashable(item);
            if (map.containsKey(item)) {
                return true;
            }
            if (isNumber(item)) {
                for (Object key : map.keySet()) {
                    if (isNumber(key) && eq(key, item)) {
                        return true;
                    }
                }
            }
            return false;
        }
        if (container instanceof Undefined) {
            return false;
        }
        if (container instanceof PyView view) {
            return view.contains(item);
        }
        if (container instanceof PyIterator iterator) {
            while (iterator.hasNext()) {
                Object element = iterator.next();
                if (element == item || eq(element, item)) {
                    return true;
                }
            }
            return false;
        }
        throw ChatTemplateException.typeError("argument of type " + repr(typeName(container)) + " is not iterable");
    }

    static void requireHashable(Object key) {
        if (key instanceof List<?> && !(key instanceof PyTuple) || key instanceof Map<?, ?>) {
            throw ChatTemplateException.typeError("unhashable type: " + repr(typeName(key)));
        }
    }

    // ---------------------------------------------------------------- containers

    /** Python's iter(): the items a for loop or a filter walks over (a generator is used up). */
    static List<?> iterate(Object v) {
        if (v instanceof List<?> list) {
            return list;
        }
        if (v instanceof PyIterator iterator) {
            return iterator.drain();
        }
        if (v instanceof PyView view) {
            return view.items();
        }
        if (v instanceof Map<?, ?> map) {
            return new ArrayList<>(map.keySet());
        }
        if (v instanceof String s) {
            return PyStr.characters(s);
        }
        if (v instanceof Undefined) {
            return List.of();
        }
        throw ChatTemplateException.typeError(repr(typeName(v)) + " object is not iterable");
    }

    /** A lazy iter(): generators are read one item at a time, everything else via {@link #iterate}. */
    static java.util.Iterator<?> iterator(Object v) {
        return v instanceof PyIterator iterator ? iterator : iterate(v).iterator();
    }

    static boolean isIterable(Object v) {
        return v instanceof List<?> || v instanceof Map<?, ?> || v instanceof String || v instanceof Undefined
                || v instanceof LoopContext || v instanceof PyIterator || v instanceof PyView;
    }

    /** Python's len(). */
    static int len(Object v) {
        if (v instanceof String s) {
            return PyStr.length(s);
        }
        if (v instanceof List<?> list) {
            return list.size();
        }
        if (v instanceof Map<?, ?> map) {
            return map.size();
        }
        if (v instanceof Undefined) {
            return 0;
        }
        if (v instanceof LoopContext loop) {
            return loop.length();
        }
        if (v instanceof PyView view) {
            return view.size();
        }
        throw ChatTemplateException.typeError("object of type " + repr(typeName(v)) + " has no len()");
    }

    /** Returned by {@link #attribute} when the value has no Python attribute of that name. */
    private static final Object NO_ATTRIBUTE = new Object();

    /**
     * Jinja's sandboxed getattr ({@code obj.name}): a Python attribute first (dict methods such as {@code items}
     * win over keys of the same name), then the item of that name, else undefined.
     */
    static Object getattr(Object obj, String name) {
        Object attribute = attribute(obj, name);
        if (attribute != NO_ATTRIBUTE) {
            return attribute;
        }
        if (obj instanceof Map<?, ?> map) {
            Object value = map.get(name);
            if (value != null || map.containsKey(name)) {
                return value;
            }
        }
        return Undefined.member(obj, name);
    }

    /** Only the Python attribute (no item fallback), as the {@code attr} filter looks it up. */
    static Object attributeOrUndefined(Object obj, String name) {
        Object attribute = attribute(obj, name);
        return attribute == NO_ATTRIBUTE ? Undefined.member(obj, name) : attribute;
    }

    /** The Python attribute {@code name} of {@code obj} (a bound method, a namespace or loop attribute). */
    private static Object attribute(Object obj, String name) {
        if (obj instanceof Undefined u) {
            throw u.error();
        }
        if (name.startsWith("__") && name.endsWith("__")) {
            return Undefined.unsafe(obj, name);
        }
        if (obj instanceof Map<?, ?>) {
            if (DICT_METHODS.contains(name)) {
                return new BoundMethod(obj, name);
            }
            return DICT_UNSAFE.contains(name) ? Undefined.unsafe(obj, name) : NO_ATTRIBUTE;
        }
        if (obj instanceof String) {
            return STR_METHODS.contains(name) ? new BoundMethod(obj, name) : NO_ATTRIBUTE;
        }
        if (obj instanceof PyTuple) {
            return LIST_METHODS.contains(name) && !name.equals("copy") ? new BoundMethod(obj, name) : NO_ATTRIBUTE;
        }
        if (obj instanceof List<?>) {
            if (LIST_METHODS.contains(name)) {
                return new BoundMethod(obj, name);
            }
            return LIST_UNSAFE.contains(name) ? Undefined.unsafe(obj, name) : NO_ATTRIBUTE;
        }
        if (obj instanceof Namespace ns) {
            return ns.has(name) ? ns.get(name) : NO_ATTRIBUTE;
        }
        if (obj instanceof LoopContext loop) {
            return loop.attribute(name);
        }
        return NO_ATTRIBUTE;
    }

    /**
     * Jinja's sandboxed getitem ({@code obj[key]}): the item first, then (for string keys) the attribute, else
     * undefined. An index out of range is undefined rather than an error.
     */
    static Object getitem(Object obj, Object key) {
        if (obj instanceof Undefined u) {
            throw u.error();
        }
        if (key instanceof PySlice && !(obj instanceof List<?>) && !(obj instanceof String)) {
            // Jinja compiles slices to plain Python subscription, without the undefined fallback.
            throw ChatTemplateException.typeError(obj instanceof Map<?, ?> ? "unhashable type: 'slice'"
                    : repr(typeName(obj)) + " object is not subscriptable");
        }
        if (obj instanceof Map<?, ?> map) {
            Object value = map.get(key);
            if (value != null || map.containsKey(key)) {
                return value;
            }
            if (isNumber(key)) {
                for (Map.Entry<?, ?> entry : map.entrySet()) {
                    if (isNumber(entry.getKey()) && eq(entry.getKey(), key)) {
                        return entry.getValue();
                    }
                }
            }
        } else if (obj instanceof List<?> list) {
            if (key instanceof PySlice slice) {
                int[] indices = slice.indices(list.size());
                List<Object> picked = new ArrayList<>(indices.length);
                for (int index : indices) {
                    picked.add(list.get(index));
                }
                return obj instanceof PyTuple ? PyTuple.copyOf(picked) : picked;
            }
            if (isInt(key) || key instanceof Boolean) {
                long index = asLong(key);
                if (index < 0) {
                    index += list.size();
                }
                if (index >= 0 && index < list.size()) {
                    return list.get((int) index);
                }
            }
        } else if (obj instanceof String s) {
            if (key instanceof PySlice slice) {
                return PyStr.slice(s, slice);
            }
            if (isInt(key) || key instanceof Boolean) {
                String character = PyStr.at(s, asLong(key));
                if (character != null) {
                    return character;
                }
            }
        }
        if (key instanceof String name) {
            Object attribute = attribute(obj, name);
            if (attribute != NO_ATTRIBUTE) {
                return attribute;
            }
        }
        return Undefined.member(obj, key);
    }

    /** Python's list(): a fresh list of the items of {@code v}. */
    static List<Object> list(Object v) {
        return new ArrayList<>(iterate(v));
    }

    /** Iterates the entries of a map as (key, value) tuples, as {@code dict.items()} does. */
    static List<Object> items(Map<?, ?> map) {
        List<Object> pairs = new ArrayList<>(map.size());
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            pairs.add(new PyTuple(entry.getKey(), entry.getValue()));
        }
        return pairs;
    }
}
