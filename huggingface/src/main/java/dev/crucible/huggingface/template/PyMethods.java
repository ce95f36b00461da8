package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The Python str, dict and list methods templates call ({@code .strip('\n')}, {@code .items()}, ...). */
final class PyMethods {

    private static final Object NONE = null;
    private static final Object REQUIRED = Arguments.REQUIRED;

    private PyMethods() {
    }

    static Object call(Object self, String method, Arguments args) {
        if (self instanceof String s) {
            return stringMethod(s, method, args);
        }
        if (self instanceof Map<?, ?> map) {
            return dictMethod(map, method, args);
        }
        return listMethod((List<?>) self, method, args);
    }

    private static Object stringMethod(String s, String method, Arguments args) {
        String function = "str." + method;
        switch (method) {
            case "startswith", "endswith" -> {
                Object[] a = args.bind(function, new String[] {"prefix", "start", "end"}, REQUIRED, NONE, NONE);
                return PyStr.startsOrEndsWith(s, a[0], a[1], a[2], method.equals("endswith"));
            }
            case "strip", "lstrip", "rstrip" -> {
                Object[] a = args.bind(function, new String[] {"chars"}, NONE);
                String chars = optionalString(function, a[0]);
                return PyStr.strip(s, chars, !method.equals("rstrip"), !method.equals("lstrip"));
            }
            case "split", "rsplit" -> {
                Object[] a = args.bind(function, new String[] {"sep", "maxsplit"}, NONE, -1L);
                String sep = optionalString(function, a[0]);
                long maxsplit = integer(function, a[1]);
                return method.equals("split") ? PyStr.split(s, sep, maxsplit) : PyStr.rsplit(s, sep, maxsplit);
            }
            case "splitlines" -> {
                Object[] a = args.bind(function, new String[] {"keepends"}, false);
                return PyStr.splitlines(s, Py.truthy(a[0]));
            }
            case "replace" -> {
                Object[] a = args.bind(function, new String[] {"old", "new", "count"}, REQUIRED, REQUIRED, -1L);
                return PyStr.replace(s, string(function, a[0]), string(function, a[1]), integer(function, a[2]));
            }
            case "upper" -> {
                args.bind(function, new String[0]);
                return PyStr.upper(s);
            }
            case "lower", "casefold" -> {
                args.bind(function, new String[0]);
                return PyStr.lower(s);
            }
            case "title" -> {
                args.bind(function, new String[0]);
                return PyStr.title(s);
            }
            case "capitalize" -> {
                args.bind(function, new String[0]);
                return PyStr.capitalize(s);
            }
            case "swapcase" -> {
                args.bind(function, new String[0]);
                return PyStr.swapcase(s);
            }
            case "find", "rfind", "index", "rindex" -> {
                Object[] a = args.bind(function, new String[] {"sub", "start", "end"}, REQUIRED, NONE, NONE);
                int found = PyStr.find(s, string(function, a[0]), a[1], a[2], method.startsWith("r"));
                if (found < 0 && method.endsWith("index")) {
                    throw ChatTemplateException.valueError("substring not found");
                }
                return (long) found;
            }
            case "count" -> {
                Object[] a = args.bind(function, new String[] {"sub", "start", "end"}, REQUIRED, NONE, NONE);
                return (long) PyStr.count(s, string(function, a[0]), a[1], a[2]);
            }
            case "join" -> {
                Object[] a = args.bind(function, new String[] {"iterable"}, REQUIRED);
                StringBuilder out = new StringBuilder();
                List<?> items = Py.iterate(a[0]);
                for (int i = 0; i < items.size(); i++) {
                    if (!(items.get(i) instanceof String item)) {
                        throw ChatTemplateException.typeError("sequence item " + i + ": expected str instance, "
                                + Py.typeName(items.get(i)) + " found");
                    }
                    if (i > 0) {
                        out.append(s);
                    }
                    out.append(item);
                }
                return out.toString();
            }
            case "isdigit", "isdecimal", "isnumeric" -> {
                args.bind(function, new String[0]);
                return !s.isEmpty() && s.codePoints().allMatch(Character::isDigit);
            }
            case "isalpha" -> {
                args.bind(function, new String[0]);
                return !s.isEmpty() && s.codePoints().allMatch(Character::isLetter);
            }
            case "isalnum" -> {
                args.bind(function, new String[0]);
                return !s.isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit);
            }
            case "isspace" -> {
                args.bind(function, new String[0]);
                return !s.isEmpty() && s.codePoints().allMatch(PyStr::isSpace);
            }
            case "islower" -> {
                args.bind(function, new String[0]);
                return PyStr.isLower(s);
            }
            case "isupper" -> {
                args.bind(function, new String[0]);
                return PyStr.isUpper(s);
            }
            case "istitle" -> {
                args.bind(function, new String[0]);
                return PyStr.isTitle(s);
            }
            case "zfill" -> {
                Object[] a = args.bind(function, new String[] {"width"}, REQUIRED);
                return PyStr.zfill(s, (int) integer(function, a[0]));
            }
            case "center", "ljust", "rjust" -> {
                Object[] a = args.bind(function, new String[] {"width", "fillchar"}, REQUIRED, " ");
                int width = (int) integer(function, a[0]);
                String fill = string(function, a[1]);
                if (PyStr.length(fill) != 1) {
                    throw ChatTemplateException.typeError("The fill character must be exactly one character long");
                }
                return switch (method) {
                    case "center" -> PyStr.center(s, width, fill);
                    case "ljust" -> PyStr.ljust(s, width, fill);
                    default -> PyStr.rjust(s, width, fill);
                };
            }
            case "partition", "rpartition" -> {
                Object[] a = args.bind(function, new String[] {"sep"}, REQUIRED);
                String sep = string(function, a[0]);
                if (sep.isEmpty()) {
                    throw ChatTemplateException.valueError("empty separator");
                }
                int found = method.equals("partition") ? s.indexOf(sep) : s.lastIndexOf(sep);
                if (found < 0) {
                    return method.equals("partition") ? new PyTuple(s, "", "") : new PyTuple("", "", s);
                }
                return new PyTuple(s.substring(0, found), sep, s.substring(found + sep.length()));
            }
            case "removeprefix" -> {
                Object[] a = args.bind(function, new String[] {"prefix"}, REQUIRED);
                String prefix = string(function, a[0]);
                return s.startsWith(prefix) ? s.substring(prefix.length()) : s;
            }
            case "removesuffix" -> {
                Object[] a = args.bind(function, new String[] {"suffix"}, REQUIRED);
                String suffix = string(function, a[0]);
                return s.endsWith(suffix) && !suffix.isEmpty() ? s.substring(0, s.length() - suffix.length()) : s;
            }
            case "format" -> {
                return PyFormat.brace(s, args);
            }
            default -> throw ChatTemplateException.runtime("AttributeError", "'str' object has no attribute "
                    + Py.repr(method));
        }
    }

    private static Object dictMethod(Map<?, ?> map, String method, Arguments args) {
        String function = "dict." + method;
        switch (method) {
            case "items" -> {
                args.bind(function, new String[0]);
                return new PyView(map, PyView.Kind.ITEMS);
            }
            case "keys" -> {
                args.bind(function, new String[0]);
                return new PyView(map, PyView.Kind.KEYS);
            }
            case "values" -> {
                args.bind(function, new String[0]);
                return new PyView(map, PyView.Kind.VALUES);
            }
            case "get" -> {
                Object[] a = args.bind(function, new String[] {"key", "default"}, REQUIRED, NONE);
                Py.requireHashable(a[0]);
                Object value = map.get(a[0]);
                return value != null || map.containsKey(a[0]) ? value : a[1];
            }
            case "copy" -> {
                args.bind(function, new String[0]);
                return new LinkedHashMap<Object, Object>(map);
            }
            default -> throw ChatTemplateException.runtime("AttributeError", "'dict' object has no attribute "
                    + Py.repr(method));
        }
    }

    private static Object listMethod(List<?> list, String method, Arguments args) {
        String function = Py.typeName(list) + "." + method;
        switch (method) {
            case "index" -> {
                Object[] a = args.bind(function, new String[] {"value"}, REQUIRED);
                for (int i = 0; i < list.size(); i++) {
                    if (Py.eq(list.get(i), a[0])) {
                        return (long) i;
                    }
                }
                throw ChatTemplateException.valueError(Py.repr(a[0]) + " is not in list");
            }
            case "count" -> {
                Object[] a = args.bind(function, new String[] {"value"}, REQUIRED);
                long count = 0;
                for (Object item : list) {
                    if (Py.eq(item, a[0])) {
                        count++;
                    }
                }
                return count;
            }
            case "copy" -> {
                args.bind(function, new String[0]);
                return new ArrayList<Object>(list);
            }
            default -> throw ChatTemplateException.runtime("AttributeError", Py.repr(Py.typeName(list))
                    + " object has no attribute " + Py.repr(method));
        }
    }

    static String string(String function, Object value) {
        if (value instanceof String s) {
            return s;
        }
        if (value instanceof Undefined u) {
            throw u.error();
        }
        throw ChatTemplateException.typeError(function + "() argument must be str, not " + Py.typeName(value));
    }

    private static String optionalString(String function, Object value) {
        return value == null ? null : string(function, value);
    }

    static long integer(String function, Object value) {
        if (Py.isInt(value) || value instanceof Boolean) {
            return Py.asLong(value);
        }
        if (value instanceof Undefined u) {
            throw u.error();
        }
        throw ChatTemplateException.typeError(function + "(): " + Py.repr(Py.typeName(value))
                + " object cannot be interpreted as an integer");
    }
}
