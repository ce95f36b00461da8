package dev.crucible.huggingface.template;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * Jinja's built-in filters, plus {@code tojson} as transformers replaces it. Left out are the ones that make no
 * sense for chat prompts or cannot be reproduced (random, pprint, urlize, urlencode, xmlattr, filesizeformat,
 * striptags, wordwrap, slice, groupby); a template that uses one fails with "No filter named ...".
 */
final class Filters {

    /** One filter: the value left of {@code |} and the arguments after the filter name. */
    @FunctionalInterface
    interface Filter {
        Object apply(RenderState state, Object value, Arguments args);
    }

    private static final Object NONE = null;
    private static final Object REQUIRED = Arguments.REQUIRED;
    private static final Map<String, Filter> FILTERS = new HashMap<>();

    static {
        FILTERS.put("abs", (st, v, a) -> {
            none("abs", a);
            if (v instanceof Undefined u) {
                throw u.error();
            }
            if (!Py.isNumber(v)) {
                throw ChatTemplateException.typeError("bad operand type for abs(): " + Py.repr(Py.typeName(v)));
            }
            return Py.isFloat(v) ? (Object) Math.abs(Py.asDouble(v)) : Py.compare("<", v, 0L) ? PyArithmetic.negate(v)
                    : PyArithmetic.plus(v);
        });
        FILTERS.put("attr", (st, v, a) -> {
            Object name = a.bind("attr", new String[] {"name"}, REQUIRED)[0];
            return Py.attributeOrUndefined(v, Py.str(name));
        });
        FILTERS.put("batch", Filters::batch);
        FILTERS.put("capitalize", (st, v, a) -> {
            none("capitalize", a);
            return PyStr.capitalize(Py.str(v));
        });
        FILTERS.put("center", (st, v, a) -> {
            Object width = a.bind("center", new String[] {"width"}, 80L)[0];
            return PyStr.center(Py.str(v), (int) PyMethods.integer("center", width), " ");
        });
        Filter length = (st, v, a) -> {
            none("length", a);
            return (long) Py.len(v);
        };
        FILTERS.put("length", length);
        FILTERS.put("count", length);
        Filter defaultFilter = (st, v, a) -> {
            Object[] p = a.bind("default", new String[] {"default_value", "boolean"}, "", false);
            return v instanceof Undefined || (Py.truthy(p[1]) && !Py.truthy(v)) ? p[0] : v;
        };
        FILTERS.put("default", defaultFilter);
        FILTERS.put("d", defaultFilter);
        FILTERS.put("dictsort", Filters::dictsort);
        Filter escape = (st, v, a) -> {
            none("escape", a);
            return htmlEscape(Py.str(v));
        };
        FILTERS.put("escape", escape);
        FILTERS.put("e", escape);
        FILTERS.put("forceescape", escape);
        FILTERS.put("first", (st, v, a) -> {
            none("first", a);
            Iterator<?> items = Py.iterator(v);
            return items.hasNext() ? items.next() : Undefined.withHint("No first item, sequence was empty.");
        });
        FILTERS.put("last", (st, v, a) -> {
            none("last", a);
            if (v instanceof PyIterator iterator) {
                throw ChatTemplateException.typeError(Py.repr(iterator.typeName()) + " object is not reversible");
            }
            List<?> items = Py.iterate(v);
            return items.isEmpty() ? Undefined.withHint("No last item, sequence was empty.")
                    : items.get(items.size() - 1);
        });
        FILTERS.put("float", (st, v, a) -> {
            Object fallback = a.bind("float", new String[] {"default"}, 0.0)[0];
            if (v instanceof Undefined u) {
                throw u.error();
            }
            Double parsed = toFloat(v);
            return parsed != null ? parsed : fallback;
        });
        FILTERS.put("int", Filters::toInt);
        FILTERS.put("format", (st, v, a) -> {
            if (!a.positional().isEmpty() && !a.keywords().isEmpty()) {
                throw ChatTemplateException.runtime("FilterArgumentError",
                        "can't handle positional and keyword arguments at the same time");
            }
            Object values = a.keywords().isEmpty() ? PyTuple.copyOf(a.positional())
                    : new LinkedHashMap<Object, Object>(a.keywords());
            return PyFormat.percent(Py.str(v), values);
        });
        FILTERS.put("indent", Filters::indent);
        FILTERS.put("items", (st, v, a) -> {
            none("items", a);
            return PyIterator.generator("do_items", () -> {
                if (v instanceof Undefined) {
                    return List.of().iterator();
                }
                if (!(v instanceof Map<?, ?> map)) {
                    throw ChatTemplateException.typeError("Can only get item pairs from a mapping.");
                }
                return Py.items(map).iterator();
            });
        });
        FILTERS.put("join", (st, v, a) -> {
            Object[] p = a.bind("join", new String[] {"d", "attribute"}, "", NONE);
            List<?> items = Py.iterate(v);
            if (p[1] != null) {
                items = mapped(items, attributeGetter(p[1], null, null));
            }
            String separator = Py.str(p[0]);
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < items.size(); i++) {
                if (i > 0) {
                    out.append(separator);
                }
                out.append(Py.str(items.get(i)));
            }
            return out.toString();
        });
        FILTERS.put("list", (st, v, a) -> {
            none("list", a);
            return Py.list(v);
        });
        FILTERS.put("lower", (st, v, a) -> {
            none("lower", a);
            return PyStr.lower(Py.str(v));
        });
        FILTERS.put("upper", (st, v, a) -> {
            none("upper", a);
            return PyStr.upper(Py.str(v));
        });
        FILTERS.put("map", Filters::map);
        FILTERS.put("min", (st, v, a) -> minOrMax(v, a, "min", -1));
        FILTERS.put("max", (st, v, a) -> minOrMax(v, a, "max", 1));
        FILTERS.put("select", (st, v, a) -> select(st, v, a, false, true));
        FILTERS.put("reject", (st, v, a) -> select(st, v, a, false, false));
        FILTERS.put("selectattr", (st, v, a) -> select(st, v, a, true, true));
        FILTERS.put("rejectattr", (st, v, a) -> select(st, v, a, true, false));
        FILTERS.put("replace", (st, v, a) -> {
            Object[] p = a.bind("replace", new String[] {"old", "new", "count"}, REQUIRED, REQUIRED, NONE);
            long count = p[2] == null ? -1 : PyMethods.integer("replace", p[2]);
            return PyStr.replace(Py.str(v), Py.str(p[0]), Py.str(p[1]), count);
        });
        FILTERS.put("reverse", (st, v, a) -> {
            none("reverse", a);
            if (v instanceof String s) {
                return new StringBuilder(s).reverse().toString();
            }
            List<Object> items = Py.list(v);
            Collections.reverse(items);
            if (v instanceof PyIterator) {
                return items; // reversed() refuses a generator, so Jinja falls back to a reversed list
            }
            String iteratorType = v instanceof List<?> && !(v instanceof PyTuple) ? "list_reverseiterator"
                    : v instanceof Map<?, ?> ? "dict_reversekeyiterator"
                    : v instanceof PyView view ? "dict_reverse" + view.typeName().substring(5) + "iterator"
                    : "reversed";
            return PyIterator.iterator(iteratorType, items::iterator);
        });
        FILTERS.put("round", Filters::round);
        FILTERS.put("safe", (st, v, a) -> {
            none("safe", a);
            return Py.str(v);
        });
        FILTERS.put("sort", Filters::sort);
        FILTERS.put("string", (st, v, a) -> {
            none("string", a);
            return Py.str(v);
        });
        FILTERS.put("sum", (st, v, a) -> {
            Object[] p = a.bind("sum", new String[] {"attribute", "start"}, NONE, 0L);
            List<?> items = Py.iterate(v);
            if (p[0] != null) {
                items = mapped(items, attributeGetter(p[0], null, null));
            }
            Object total = p[1];
            for (Object item : items) {
                total = PyArithmetic.add(total, item);
            }
            return total;
        });
        FILTERS.put("title", (st, v, a) -> {
            none("title", a);
            return jinjaTitle(Py.str(v));
        });
        FILTERS.put("tojson", (st, v, a) -> {
            Object[] p = a.bind("tojson", new String[] {"ensure_ascii", "indent", "separators", "sort_keys"},
                    false, NONE, NONE, false);
            return Json.dumps(v, Py.truthy(p[0]), p[1], p[2], Py.truthy(p[3]));
        });
        FILTERS.put("trim", (st, v, a) -> {
            Object chars = a.bind("trim", new String[] {"chars"}, NONE)[0];
            return PyStr.strip(Py.str(v), chars == null ? null : PyMethods.string("trim", chars), true, true);
        });
        FILTERS.put("truncate", Filters::truncate);
        FILTERS.put("unique", Filters::unique);
        FILTERS.put("wordcount", (st, v, a) -> {
            none("wordcount", a);
            return wordCount(Py.str(v));
        });
    }

    private Filters() {
    }

    /** The filter of that name, or null when there is none. */
    static Filter get(String name) {
        return FILTERS.get(name);
    }

    private static void none(String filter, Arguments args) {
        args.bind(filter, new String[0]);
    }

    // ---------------------------------------------------------------- attribute paths

    /**
     * Jinja's make_attrgetter: "a.b.0" looks up a, then b, then item 0, each with getitem rules.
     *
     * @param fallback returned instead of an undefined lookup result when not null
     * @param postprocess applied to the result when not null (lower-casing for case-insensitive sorts)
     */
    private static UnaryOperator<Object> attributeGetter(Object attribute, Object fallback,
                                                         UnaryOperator<Object> postprocess) {
        List<Object> parts = attributeParts(attribute);
        return item -> {
            Object value = item;
            for (Object part : parts) {
                value = Py.getitem(value, part);
                if (fallback != null && value instanceof Undefined) {
                    value = fallback;
                }
            }
            return postprocess == null ? value : postprocess.apply(value);
        };
    }

    private static List<Object> attributeParts(Object attribute) {
        List<Object> parts = new ArrayList<>();
        if (attribute == null) {
            return parts;
        }
        if (!(attribute instanceof String path)) {
            parts.add(attribute);
            return parts;
        }
        for (Object part : PyStr.split(path, ".", -1)) {
            String text = (String) part;
            parts.add(!text.isEmpty() && text.chars().allMatch(c -> c >= '0' && c <= '9')
                    ? (Object) Long.parseLong(text) : text);
        }
        return parts;
    }

    private static Object ignoreCase(Object value) {
        return value instanceof String s ? PyStr.lower(s) : value;
    }

    private static List<Object> mapped(List<?> items, UnaryOperator<Object> function) {
        List<Object> result = new ArrayList<>(items.size());
        for (Object item : items) {
            result.add(function.apply(item));
        }
        return result;
    }

    // ---------------------------------------------------------------- sequence filters

    /** Applies {@code function} to each item as it is read. */
    private static Iterator<Object> mappedLazily(Iterator<?> items, UnaryOperator<Object> function) {
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return items.hasNext();
            }

            @Override
            public Object next() {
                return function.apply(items.next());
            }
        };
    }

    private static Object map(RenderState state, Object value, Arguments args) {
        return PyIterator.generator("sync_do_map", () -> {
            if (!Py.truthy(value)) {
                return List.of().iterator();
            }
            return mappedLazily(Py.iterator(value), mapFunction(state, args));
        });
    }

    private static UnaryOperator<Object> mapFunction(RenderState state, Arguments args) {
        UnaryOperator<Object> function;
        if (args.positional().isEmpty() && args.keywords().containsKey("attribute")) {
            Map<String, Object> keywords = new LinkedHashMap<>(args.keywords());
            Object attribute = keywords.remove("attribute");
            Object fallback = keywords.remove("default");
            if (!keywords.isEmpty()) {
                throw ChatTemplateException.runtime("FilterArgumentError", "Unexpected keyword argument "
                        + Py.repr(keywords.keySet().iterator().next()));
            }
            function = attributeGetter(attribute, fallback, null);
        } else {
            if (args.positional().isEmpty()) {
                throw ChatTemplateException.runtime("FilterArgumentError", "map requires a filter argument");
            }
            String name = Py.str(args.positional().get(0));
            Filter filter = FILTERS.get(name);
            if (filter == null) {
                throw ChatTemplateException.runtime("TemplateRuntimeError", "No filter named " + Py.repr(name) + ".");
            }
            Arguments rest = args.dropPositional(1);
            function = item -> filter.apply(state, item, rest);
        }
        return function;
    }

    private static Object select(RenderState state, Object value, Arguments args, boolean byAttribute,
                                 boolean keep) {
        return PyIterator.generator("select_or_reject", () -> {
            if (!Py.truthy(value)) {
                return List.of().iterator();
            }
            return selectLazily(Py.iterator(value), args, byAttribute, keep);
        });
    }

    private static Iterator<Object> selectLazily(Iterator<?> items, Arguments args, boolean byAttribute,
                                                 boolean keep) {
        int offset = 0;
        UnaryOperator<Object> transform = UnaryOperator.identity();
        if (byAttribute) {
            if (args.positional().isEmpty()) {
                throw ChatTemplateException.runtime("FilterArgumentError", "Missing parameter for attribute name");
            }
            transform = attributeGetter(args.positional().get(0), null, null);
            offset = 1;
        }
        String testName = args.positional().size() > offset ? Py.str(args.positional().get(offset)) : null;
        Arguments testArgs = args.dropPositional(offset + 1);
        UnaryOperator<Object> subjectOf = transform;
        return filtering(items, item -> {
            Object subject = subjectOf.apply(item);
            boolean passed = testName == null ? Py.truthy(subject) : Tests.run(testName, subject, testArgs);
            return passed == keep;
        });
    }

    /** The items that pass {@code accept}, found as they are read. */
    private static Iterator<Object> filtering(Iterator<?> items, Predicate<Object> accept) {
        return new Iterator<>() {
            private Object pending;
            private boolean hasPending;

            @Override
            public boolean hasNext() {
                while (!hasPending && items.hasNext()) {
                    Object candidate = items.next();
                    if (accept.test(candidate)) {
                        pending = candidate;
                        hasPending = true;
                    }
                }
                return hasPending;
            }

            @Override
            public Object next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                hasPending = false;
                return pending;
            }
        };
    }

    private static Object sort(RenderState state, Object value, Arguments args) {
        Object[] p = args.bind("sort", new String[] {"reverse", "case_sensitive", "attribute"}, false, false, NONE);
        boolean reverse = Py.truthy(p[0]);
        UnaryOperator<Object> postprocess = Py.truthy(p[1]) ? null : Filters::ignoreCase;
        List<UnaryOperator<Object>> keys = new ArrayList<>();
        if (p[2] instanceof String path && path.contains(",")) {
            for (Object part : PyStr.split(path, ",", -1)) {
                keys.add(attributeGetter(part, null, postprocess));
            }
        } else {
            keys.add(attributeGetter(p[2], null, postprocess));
        }
        List<Object> items = Py.list(value);
        Comparator<Object> order = (x, y) -> {
            List<Object> kx = new ArrayList<>();
            List<Object> ky = new ArrayList<>();
            for (UnaryOperator<Object> key : keys) {
                kx.add(key.apply(x));
                ky.add(key.apply(y));
            }
            return Py.order("<", kx, ky);
        };
        items.sort(reverse ? order.reversed() : order);
        return items;
    }

    private static Object dictsort(RenderState state, Object value, Arguments args) {
        Object[] p = args.bind("dictsort", new String[] {"case_sensitive", "by", "reverse"}, false, "key", false);
        if (!(value instanceof Map<?, ?> map)) {
            throw ChatTemplateException.typeError("dictsort needs a mapping, not " + Py.typeName(value));
        }
        int position = switch (Py.str(p[1])) {
            case "key" -> 0;
            case "value" -> 1;
            default -> throw ChatTemplateException.runtime("FilterArgumentError",
                    "You can only sort by either \"key\" or \"value\"");
        };
        boolean caseSensitive = Py.truthy(p[0]);
        List<Object> pairs = Py.items(map);
        Comparator<Object> order = (x, y) -> {
            Object kx = ((PyTuple) x).get(position);
            Object ky = ((PyTuple) y).get(position);
            return caseSensitive ? Py.order("<", kx, ky) : Py.order("<", ignoreCase(kx), ignoreCase(ky));
        };
        pairs.sort(Py.truthy(p[2]) ? order.reversed() : order);
        return pairs;
    }

    private static Object unique(RenderState state, Object value, Arguments args) {
        return PyIterator.generator("sync_do_unique", () -> {
            Object[] p = args.bind("unique", new String[] {"case_sensitive", "attribute"}, false, NONE);
            UnaryOperator<Object> key = attributeGetter(p[1], null, Py.truthy(p[0]) ? null : Filters::ignoreCase);
            List<Object> seen = new ArrayList<>();
            return filtering(Py.iterator(value), item -> {
                Object k = key.apply(item);
                Py.requireHashable(k);
                if (Py.contains(seen, k)) {
                    return false;
                }
                seen.add(k);
                return true;
            });
        });
    }

    private static Object minOrMax(Object value, Arguments args, String name, int direction) {
        Object[] p = args.bind(name, new String[] {"case_sensitive", "attribute"}, false, NONE);
        List<?> items = Py.iterate(value);
        if (items.isEmpty()) {
            return Undefined.withHint("No aggregated item, sequence was empty.");
        }
        UnaryOperator<Object> key = attributeGetter(p[1], null, Py.truthy(p[0]) ? null : Filters::ignoreCase);
        Object best = items.get(0);
        Object bestKey = key.apply(best);
        for (int i = 1; i < items.size(); i++) {
            Object candidateKey = key.apply(items.get(i));
            if (Py.order("<", candidateKey, bestKey) * direction > 0) {
                best = items.get(i);
                bestKey = candidateKey;
            }
        }
        return best;
    }

    private static Object batch(RenderState state, Object value, Arguments args) {
        return PyIterator.generator("do_batch", () -> batches(value, args).iterator());
    }

    private static List<Object> batches(Object value, Arguments args) {
        Object[] p = args.bind("batch", new String[] {"linecount", "fill_with"}, REQUIRED, NONE);
        int size = (int) PyMethods.integer("batch", p[0]);
        if (size <= 0) {
            throw ChatTemplateException.valueError("batch size must be positive");
        }
        List<Object> batches = new ArrayList<>();
        List<Object> current = new ArrayList<>();
        for (Object item : Py.iterate(value)) {
            if (current.size() == size) {
                batches.add(current);
                current = new ArrayList<>();
            }
            current.add(item);
        }
        if (!current.isEmpty()) {
            if (p[1] != null) {
                while (current.size() < size) {
                    current.add(p[1]);
                }
            }
            batches.add(current);
        }
        return batches;
    }

    // ---------------------------------------------------------------- numbers

    private static Object toInt(RenderState state, Object value, Arguments args) {
        Object[] p = args.bind("int", new String[] {"default", "base"}, 0L, 10L);
        int base = (int) PyMethods.integer("int", p[1]);
        if (value instanceof Undefined u) {
            throw u.error();
        }
        if (value instanceof String s) {
            BigInteger parsed = parseInt(s, base);
            if (parsed != null) {
                return Py.normalize(parsed);
            }
        } else if (Py.isInt(value) || value instanceof Boolean) {
            return Py.normalize(BigInteger.valueOf(Py.asLong(value)));
        }
        Double asFloat = toFloat(value);
        if (asFloat != null && !asFloat.isNaN() && !asFloat.isInfinite()) {
            return Py.normalize(new BigDecimal(asFloat).toBigInteger());
        }
        return p[0];
    }

    /** Python's int(text, base); null when Python would raise ValueError. */
    private static BigInteger parseInt(String text, int base) {
        String s = PyStr.strip(text, null, true, true).replace("_", "");
        boolean negative = false;
        if (s.startsWith("+") || s.startsWith("-")) {
            negative = s.startsWith("-");
            s = s.substring(1);
        }
        String lower = s.toLowerCase(java.util.Locale.ROOT);
        if (base == 0 || base == 16 || base == 8 || base == 2) {
            int prefixBase = lower.startsWith("0x") ? 16 : lower.startsWith("0o") ? 8 : lower.startsWith("0b") ? 2 : 0;
            if (prefixBase != 0 && (base == 0 || base == prefixBase)) {
                s = s.substring(2);
                base = prefixBase;
            } else if (base == 0) {
                base = 10;
            }
        }
        if (s.isEmpty() || text.contains("__") || s.startsWith("_")) {
            return null;
        }
        try {
            BigInteger parsed = new BigInteger(s, base);
            return negative ? parsed.negate() : parsed;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Python's float(value); null when Python would raise TypeError or ValueError. */
    private static Double toFloat(Object value) {
        if (Py.isNumber(value)) {
            return Py.asDouble(value);
        }
        if (!(value instanceof String text)) {
            return null;
        }
        String s = PyStr.strip(text, null, true, true).replace("_", "");
        String lower = s.toLowerCase(java.util.Locale.ROOT);
        String unsigned = lower.startsWith("+") || lower.startsWith("-") ? lower.substring(1) : lower;
        if (unsigned.equals("inf") || unsigned.equals("infinity")) {
            return lower.startsWith("-") ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
        }
        if (unsigned.equals("nan")) {
            return Double.NaN;
        }
        if (unsigned.isEmpty() || !unsigned.chars().allMatch(c -> (c >= '0' && c <= '9') || c == '.' || c == 'e'
                || c == '+' || c == '-')) {
            return null;
        }
        try {
            return Double.parseDouble(s);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static Object round(RenderState state, Object value, Arguments args) {
        Object[] p = args.bind("round", new String[] {"precision", "method"}, 0L, "common");
        int precision = (int) PyMethods.integer("round", p[0]);
        String method = Py.str(p[1]);
        if (!method.equals("common") && !method.equals("ceil") && !method.equals("floor")) {
            throw ChatTemplateException.runtime("FilterArgumentError", "method must be common, ceil or floor");
        }
        if (value instanceof Undefined u) {
            throw u.error();
        }
        if (!Py.isNumber(value)) {
            throw ChatTemplateException.typeError("type " + Py.typeName(value) + " doesn't define __round__ method");
        }
        if (method.equals("common")) {
            if (!Py.isFloat(value)) {
                return PyArithmetic.plus(value);
            }
            double d = Py.asDouble(value);
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                return d;
            }
            double rounded = new BigDecimal(d).setScale(precision, RoundingMode.HALF_EVEN).doubleValue();
            return rounded == 0 ? Math.copySign(0.0, d) : rounded;
        }
        double scale = Math.pow(10, precision);
        double scaled = Py.asDouble(value) * scale;
        return (method.equals("ceil") ? Math.ceil(scaled) : Math.floor(scaled)) / scale;
    }

    // ---------------------------------------------------------------- text

    private static Object indent(RenderState state, Object value, Arguments args) {
        Object[] p = args.bind("indent", new String[] {"width", "first", "blank"}, 4L, false, false);
        String indentation = p[0] instanceof String s ? s : " ".repeat((int) Math.max(0,
                PyMethods.integer("indent", p[0])));
        if (!(value instanceof String)) {
            // Jinja appends "\n" to the value itself, so anything but a string fails as in Python.
            if (value instanceof Undefined u) {
                throw u.error();
            }
            if (value instanceof List<?>) {
                throw ChatTemplateException.runtime("AttributeError", Py.repr(Py.typeName(value))
                        + " object has no attribute 'splitlines'");
            }
            throw ChatTemplateException.typeError("unsupported operand type(s) for +=: " + Py.repr(Py.typeName(value))
                    + " and 'str'");
        }
        String text = value + "\n";
        List<Object> lines = PyStr.splitlines(text, false);
        StringBuilder out = new StringBuilder();
        if (Py.truthy(p[2])) {
            for (int i = 0; i < lines.size(); i++) {
                if (i > 0) {
                    out.append('\n').append(indentation);
                }
                out.append(lines.get(i));
            }
        } else {
            out.append(lines.get(0));
            for (int i = 1; i < lines.size(); i++) {
                String line = (String) lines.get(i);
                out.append('\n');
                if (!line.isEmpty()) {
                    out.append(indentation);
                }
                out.append(line);
            }
        }
        return Py.truthy(p[1]) ? indentation + out : out.toString();
    }

    private static Object truncate(RenderState state, Object value, Arguments args) {
        Object[] p = args.bind("truncate", new String[] {"length", "killwords", "end", "leeway"}, 255L, false,
                "...", 5L);
        int length = (int) PyMethods.integer("truncate", p[0]);
        String end = Py.str(p[2]);
        long leeway = p[3] == null ? 5 : PyMethods.integer("truncate", p[3]);
        if (Py.len(value) <= length + leeway) {
            return value;
        }
        if (!(value instanceof String s)) {
            throw ChatTemplateException.typeError("truncate needs a string, not " + Py.typeName(value));
        }
        String head = PyStr.slice(s, new PySlice(null, (long) (length - PyStr.length(end)), null));
        if (Py.truthy(p[1])) {
            return head + end;
        }
        return PyStr.rsplit(head, " ", 1).get(0) + end;
    }

    /** Jinja's title filter (not str.title): each word after a space, dash or opening bracket is capitalised. */
    private static String jinjaTitle(String s) {
        StringBuilder out = new StringBuilder(s.length());
        boolean wordStart = true;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            boolean separator = cp == '-' || PyStr.isSpace(cp) || cp == '(' || cp == '{' || cp == '[' || cp == '<';
            if (separator) {
                out.appendCodePoint(cp);
                wordStart = true;
            } else if (wordStart) {
                out.append(PyStr.upper(Character.toString(cp)));
                wordStart = false;
            } else {
                out.append(PyStr.lower(Character.toString(cp)));
            }
        }
        return out.toString();
    }

    private static long wordCount(String s) {
        long words = 0;
        boolean inWord = false;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            boolean wordChar = Character.isLetterOrDigit(cp) || cp == '_';
            if (wordChar && !inWord) {
                words++;
            }
            inWord = wordChar;
        }
        return words;
    }

    static String htmlEscape(String s) {
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&#34;");
                case '\'' -> out.append("&#39;");
                default -> out.append(c);
            }
        }
        return out.toString();
    }
}
