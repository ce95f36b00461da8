package dev.crucible.huggingface.template;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Python's two string formatting operations as far as templates use them: {@code "{} {name}".format(...)} and
 * {@code "%s: %d" % (a, b)}, with the common part of the format-spec mini language (fill, align, sign, zero
 * padding, width, precision and the s/d/f/e/g/x/o/% types).
 */
final class PyFormat {

    private PyFormat() {
    }

    // ---------------------------------------------------------------- str.format

    static String brace(String template, Arguments args) {
        StringBuilder out = new StringBuilder();
        int automatic = 0;
        int i = 0;
        while (i < template.length()) {
            char c = template.charAt(i);
            if (c == '{') {
                if (i + 1 < template.length() && template.charAt(i + 1) == '{') {
                    out.append('{');
                    i += 2;
                    continue;
                }
                int close = template.indexOf('}', i);
                if (close < 0) {
                    throw ChatTemplateException.valueError("Single '{' encountered in format string");
                }
                String field = template.substring(i + 1, close);
                String spec = "";
                int colon = field.indexOf(':');
                if (colon >= 0) {
                    spec = field.substring(colon + 1);
                    field = field.substring(0, colon);
                }
                char conversion = 0;
                int bang = field.indexOf('!');
                if (bang >= 0) {
                    conversion = field.length() > bang + 1 ? field.charAt(bang + 1) : 0;
                    field = field.substring(0, bang);
                }
                Object value = lookUpField(field, args, automatic);
                if (field.isEmpty() || field.charAt(0) == '.' || field.charAt(0) == '[') {
                    automatic++; // "{}" takes the next positional argument; "{0}" and "{name}" do not
                }
                if (conversion == 'r' || conversion == 'a') {
                    value = Py.repr(value);
                } else if (conversion == 's') {
                    value = Py.str(value);
                }
                out.append(applySpec(value, spec));
                i = close + 1;
            } else if (c == '}') {
                if (i + 1 < template.length() && template.charAt(i + 1) == '}') {
                    out.append('}');
                    i += 2;
                    continue;
                }
                throw ChatTemplateException.valueError("Single '}' encountered in format string");
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private static Object lookUpField(String field, Arguments args, int automatic) {
        int end = 0;
        while (end < field.length() && field.charAt(end) != '.' && field.charAt(end) != '[') {
            end++;
        }
        String first = field.substring(0, end);
        Object value;
        if (first.isEmpty() || first.chars().allMatch(Character::isDigit)) {
            int index = first.isEmpty() ? automatic : Integer.parseInt(first);
            if (index >= args.positional().size()) {
                throw ChatTemplateException.runtime("IndexError",
                        "Replacement index " + index + " out of range for positional args tuple");
            }
            value = args.positional().get(index);
        } else {
            if (!args.keywords().containsKey(first)) {
                throw ChatTemplateException.runtime("KeyError", Py.repr(first));
            }
            value = args.keywords().get(first);
        }
        int i = end;
        while (i < field.length()) {
            if (field.charAt(i) == '.') {
                int next = i + 1;
                while (next < field.length() && field.charAt(next) != '.' && field.charAt(next) != '[') {
                    next++;
                }
                value = Py.getattr(value, field.substring(i + 1, next));
                i = next;
            } else {
                int close = field.indexOf(']', i);
                String key = field.substring(i + 1, close);
                value = Py.getitem(value, key.chars().allMatch(Character::isDigit) && !key.isEmpty()
                        ? (Object) Long.parseLong(key) : key);
                i = close + 1;
            }
        }
        return value;
    }

    /** Python's format(value, spec) for the common specs. */
    static String applySpec(Object value, String spec) {
        if (spec.isEmpty()) {
            return Py.str(value);
        }
        Spec parsed = Spec.parse(spec);
        char type = parsed.type;
        String body;
        boolean numeric = Py.isNumber(value);
        if (type == 's' || (type == 0 && !numeric)) {
            if (numeric && type == 's') {
                throw ChatTemplateException.valueError("Unknown format code 's' for object of type "
                        + Py.repr(Py.typeName(value)));
            }
            body = Py.str(value);
            if (parsed.precision >= 0 && PyStr.length(body) > parsed.precision) {
                body = body.substring(0, body.offsetByCodePoints(0, parsed.precision));
            }
            return pad(body, "", parsed, '<');
        }
        if (!numeric) {
            throw ChatTemplateException.valueError("Unknown format code '" + type + "' for object of type "
                    + Py.repr(Py.typeName(value)));
        }
        if (type == 0 && value instanceof Boolean && parsed.precision < 0) {
            return pad(Py.str(value), "", parsed, '<');
        }
        boolean negative;
        if (type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b'
                || (type == 0 && !Py.isFloat(value))) {
            if (Py.isFloat(value)) {
                throw ChatTemplateException.valueError("Unknown format code '" + type + "' for object of type 'float'");
            }
            BigInteger integer = value instanceof BigInteger big ? big : BigInteger.valueOf(Py.asLong(value));
            negative = integer.signum() < 0;
            int radix = switch (type) {
                case 'x', 'X' -> 16;
                case 'o' -> 8;
                case 'b' -> 2;
                default -> 10;
            };
            body = integer.abs().toString(radix);
            if (type == 'X') {
                body = body.toUpperCase(Locale.ROOT);
            }
            if (parsed.grouping && radix == 10) {
                body = group(body);
            }
        } else {
            double d = Py.asDouble(value);
            negative = d < 0 || (d == 0 && 1 / d < 0);
            body = formatFloat(Math.abs(d), type, parsed.precision);
        }
        String sign = negative ? "-" : parsed.sign == '+' ? "+" : parsed.sign == ' ' ? " " : "";
        return pad(body, sign, parsed, '>');
    }

    private static String formatFloat(double d, char type, int precision) {
        if (Double.isNaN(d)) {
            return Character.isUpperCase(type) ? "NAN" : "nan";
        }
        if (Double.isInfinite(d)) {
            return Character.isUpperCase(type) ? "INF" : "inf";
        }
        int digits = precision < 0 ? 6 : precision;
        return switch (type) {
            case 'f', 'F' -> new BigDecimal(d).setScale(digits, RoundingMode.HALF_EVEN).toPlainString();
            case 'e', 'E' -> {
                String formatted = String.format(Locale.ROOT, "%." + digits + "e", d);
                yield type == 'E' ? formatted.toUpperCase(Locale.ROOT) : formatted;
            }
            case '%' -> new BigDecimal(d * 100).setScale(digits, RoundingMode.HALF_EVEN).toPlainString() + "%";
            case 'g', 'G' -> {
                String formatted = general(d, digits == 0 ? 1 : digits);
                yield type == 'G' ? formatted.toUpperCase(Locale.ROOT) : formatted;
            }
            default -> precision < 0 ? Py.floatRepr(d) : general(d, digits == 0 ? 1 : digits);
        };
    }

    /** The 'g' presentation: precision significant digits, trailing zeros removed. */
    private static String general(double d, int precision) {
        if (d == 0) {
            return "0";
        }
        BigDecimal rounded = new BigDecimal(d).round(new java.math.MathContext(precision, RoundingMode.HALF_EVEN));
        int exponent = rounded.precision() - rounded.scale() - 1;
        if (exponent < -4 || exponent >= precision) {
            String mantissa = rounded.movePointLeft(exponent).stripTrailingZeros().toPlainString();
            return mantissa + (exponent < 0 ? "e-" : "e+") + (Math.abs(exponent) < 10 ? "0" : "")
                    + Math.abs(exponent);
        }
        String plain = rounded.stripTrailingZeros().toPlainString();
        return plain;
    }

    private static String group(String digits) {
        StringBuilder out = new StringBuilder();
        int lead = digits.length() % 3;
        for (int i = 0; i < digits.length(); i++) {
            if (i > 0 && (i - lead) % 3 == 0) {
                out.append(',');
            }
            out.append(digits.charAt(i));
        }
        return out.toString();
    }

    private static String pad(String body, String sign, Spec spec, char defaultAlign) {
        int length = PyStr.length(body) + sign.length();
        if (spec.width <= length) {
            return sign + body;
        }
        int margin = spec.width - length;
        char align = spec.align != 0 ? spec.align : spec.zero ? '=' : defaultAlign;
        String fill = spec.align != 0 ? spec.fill : spec.zero ? "0" : " ";
        return switch (align) {
            case '<' -> sign + body + fill.repeat(margin);
            case '^' -> fill.repeat(margin / 2) + sign + body + fill.repeat(margin - margin / 2);
            case '=' -> sign + fill.repeat(margin) + body;
            default -> fill.repeat(margin) + sign + body;
        };
    }

    private record Spec(String fill, char align, char sign, boolean zero, int width, boolean grouping,
                        int precision, char type) {

        static Spec parse(String spec) {
            int i = 0;
            String fill = " ";
            char align = 0;
            if (spec.length() >= 2 && "<>=^".indexOf(spec.charAt(1)) >= 0) {
                fill = spec.substring(0, 1);
                align = spec.charAt(1);
                i = 2;
            } else if (!spec.isEmpty() && "<>=^".indexOf(spec.charAt(0)) >= 0) {
                align = spec.charAt(0);
                i = 1;
            }
            char sign = 0;
            if (i < spec.length() && "+- ".indexOf(spec.charAt(i)) >= 0) {
                sign = spec.charAt(i++);
            }
            boolean zero = false;
            if (i < spec.length() && spec.charAt(i) == '0') {
                zero = true;
                i++;
            }
            int width = 0;
            while (i < spec.length() && Character.isDigit(spec.charAt(i))) {
                width = width * 10 + (spec.charAt(i++) - '0');
            }
            boolean grouping = false;
            if (i < spec.length() && spec.charAt(i) == ',') {
                grouping = true;
                i++;
            }
            int precision = -1;
            if (i < spec.length() && spec.charAt(i) == '.') {
                i++;
                precision = 0;
                while (i < spec.length() && Character.isDigit(spec.charAt(i))) {
                    precision = precision * 10 + (spec.charAt(i++) - '0');
                }
            }
            char type = 0;
            if (i < spec.length()) {
                type = spec.charAt(i++);
            }
            if (i != spec.length() || (type != 0 && "sdxXobfFeEgG%".indexOf(type) < 0)) {
                throw ChatTemplateException.valueError("Invalid format specifier");
            }
            return new Spec(fill, align, sign, zero, width, grouping, precision, type);
        }
    }

    // ---------------------------------------------------------------- printf-style %

    /** Python's {@code format % values}: a tuple supplies several values, a dict named ones. */
    static String percent(String format, Object values) {
        List<?> positional = values instanceof PyTuple tuple ? tuple : java.util.Collections.singletonList(values);
        Map<?, ?> named = values instanceof Map<?, ?> map ? map : null;
        // Python takes anything subscriptable (but a tuple or str) as a possible mapping and then does not insist
        // that every value is used.
        boolean mappingLike = named != null || values instanceof List<?> && !(values instanceof PyTuple)
                || values instanceof Undefined;
        StringBuilder out = new StringBuilder();
        int next = 0;
        int i = 0;
        while (i < format.length()) {
            char c = format.charAt(i++);
            if (c != '%') {
                out.append(c);
                continue;
            }
            if (i >= format.length()) {
                throw ChatTemplateException.valueError("incomplete format");
            }
            Object value = null;
            boolean haveValue = false;
            if (format.charAt(i) == '(') {
                int close = format.indexOf(')', i);
                if (values instanceof Undefined u) {
                    throw u.error();
                }
                if (named == null || close < 0) {
                    throw ChatTemplateException.typeError("format requires a mapping");
                }
                String key = format.substring(i + 1, close);
                if (!named.containsKey(key)) {
                    throw ChatTemplateException.runtime("KeyError", Py.repr(key));
                }
                value = named.get(key);
                haveValue = true;
                i = close + 1;
            }
            StringBuilder flags = new StringBuilder();
            while (i < format.length() && "-+ #0".indexOf(format.charAt(i)) >= 0) {
                flags.append(format.charAt(i++));
            }
            int width = 0;
            while (i < format.length() && Character.isDigit(format.charAt(i))) {
                width = width * 10 + (format.charAt(i++) - '0');
            }
            int precision = -1;
            if (i < format.length() && format.charAt(i) == '.') {
                i++;
                precision = 0;
                while (i < format.length() && Character.isDigit(format.charAt(i))) {
                    precision = precision * 10 + (format.charAt(i++) - '0');
                }
            }
            if (i >= format.length()) {
                throw ChatTemplateException.valueError("incomplete format");
            }
            char type = format.charAt(i++);
            if (type == '%') {
                out.append('%');
                continue;
            }
            if (!haveValue) {
                if (next >= positional.size()) {
                    throw ChatTemplateException.typeError("not enough arguments for format string");
                }
                value = positional.get(next++);
            }
            String layout = (flags.indexOf("-") >= 0 ? "<" : "") + (flags.indexOf("+") >= 0 ? "+"
                    : flags.indexOf(" ") >= 0 ? " " : "") + (flags.indexOf("0") >= 0 && flags.indexOf("-") < 0
                    ? "0" : "") + (width > 0 ? Integer.toString(width) : "");
            String spec = layout + (precision >= 0 ? "." + precision : "");
            String text = switch (type) {
                case 's' -> applySpec(Py.str(value), spec);
                case 'r', 'a' -> applySpec(Py.repr(value), spec);
                case 'd', 'i', 'u' -> {
                    if (!Py.isNumber(value)) {
                        throw ChatTemplateException.typeError("%" + type + " format: a real number is required, not "
                                + Py.typeName(value));
                    }
                    Object integer = Py.isFloat(value) ? (Object) (long) Py.asDouble(value) : value;
                    yield applySpec(integer instanceof Boolean b ? (Object) (b ? 1L : 0L) : integer, layout + "d");
                }
                case 'f', 'F', 'e', 'E', 'g', 'G', 'x', 'X', 'o' -> {
                    if (!Py.isNumber(value)) {
                        throw ChatTemplateException.typeError("must be real number, not " + Py.typeName(value));
                    }
                    boolean integral = "xXo".indexOf(type) >= 0;
                    if (integral && Py.isFloat(value)) {
                        throw ChatTemplateException.typeError("%" + type
                                + " format: an integer is required, not float");
                    }
                    yield applySpec(integral ? value : (Object) Py.asDouble(value),
                            (integral ? layout : spec) + type);
                }
                case 'c' -> applySpec(value instanceof String s ? s
                        : Character.toString((int) Py.asLong(value)), spec);
                default -> throw ChatTemplateException.valueError("unsupported format character " + Py.repr(
                        String.valueOf(type)));
            };
            out.append(text);
        }
        if (!mappingLike && next < positional.size()) {
            throw ChatTemplateException.typeError("not all arguments converted during string formatting");
        }
        return out.toString();
    }
}
