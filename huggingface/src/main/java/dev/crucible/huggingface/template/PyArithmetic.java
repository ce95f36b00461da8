package dev.crucible.huggingface.template;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.List;

/**
 * Python's arithmetic operators on template values: int results never overflow (they widen to BigInteger),
 * {@code /} always gives a float, {@code //} and {@code %} round toward negative infinity, {@code +} and {@code *}
 * also concatenate and repeat strings and lists, {@code str % values} formats. An undefined operand fails.
 */
final class PyArithmetic {

    private PyArithmetic() {
    }

    private static void failOnUndefined(Object a, Object b) {
        if (a instanceof Undefined u) {
            throw u.error();
        }
        if (b instanceof Undefined u) {
            throw u.error();
        }
    }

    private static ChatTemplateException unsupported(String op, Object a, Object b) {
        return ChatTemplateException.typeError("unsupported operand type(s) for " + op + ": "
                + Py.repr(Py.typeName(a)) + " and " + Py.repr(Py.typeName(b)));
    }

    static Object add(Object a, Object b) {
        if (a instanceof String sa && b instanceof String sb) {
            return sa.concat(sb);
        }
        failOnUndefined(a, b);
        if (Py.isNumber(a) && Py.isNumber(b)) {
            if (Py.isFloat(a) || Py.isFloat(b)) {
                return Py.asDouble(a) + Py.asDouble(b);
            }
            if (!(a instanceof BigInteger) && !(b instanceof BigInteger)) {
                long x = Py.asLong(a);
                long y = Py.asLong(b);
                long sum = x + y;
                if (((x ^ sum) & (y ^ sum)) >= 0) {
                    return sum;
                }
            }
            return Py.normalize(Py.asBig(a).add(Py.asBig(b)));
        }
        if (a instanceof String) {
            throw ChatTemplateException.typeError("can only concatenate str (not \"" + Py.typeName(b) + "\") to str");
        }
        if (a instanceof List<?> la && b instanceof List<?> lb) {
            boolean tuple = a instanceof PyTuple;
            if (tuple == (b instanceof PyTuple)) {
                List<Object> joined = new ArrayList<>(la.size() + lb.size());
                joined.addAll(la);
                joined.addAll(lb);
                return tuple ? PyTuple.copyOf(joined) : joined;
            }
        }
        if (a instanceof List<?>) {
            String kind = Py.typeName(a);
            throw ChatTemplateException.typeError("can only concatenate " + kind + " (not \"" + Py.typeName(b)
                    + "\") to " + kind);
        }
        throw unsupported("+", a, b);
    }

    static Object sub(Object a, Object b) {
        failOnUndefined(a, b);
        if (Py.isNumber(a) && Py.isNumber(b)) {
            if (Py.isFloat(a) || Py.isFloat(b)) {
                return Py.asDouble(a) - Py.asDouble(b);
            }
            if (!(a instanceof BigInteger) && !(b instanceof BigInteger)) {
                long x = Py.asLong(a);
                long y = Py.asLong(b);
                long difference = x - y;
                if (((x ^ y) & (x ^ difference)) >= 0) {
                    return difference;
                }
            }
            return Py.normalize(Py.asBig(a).subtract(Py.asBig(b)));
        }
        throw unsupported("-", a, b);
    }

    static Object mul(Object a, Object b) {
        failOnUndefined(a, b);
        if (Py.isNumber(a) && Py.isNumber(b)) {
            if (Py.isFloat(a) || Py.isFloat(b)) {
                return Py.asDouble(a) * Py.asDouble(b);
            }
            return Py.normalize(Py.asBig(a).multiply(Py.asBig(b)));
        }
        if ((a instanceof String || a instanceof List<?>) && (Py.isInt(b) || b instanceof Boolean)) {
            return repeat(a, Py.asLong(b));
        }
        if ((b instanceof String || b instanceof List<?>) && (Py.isInt(a) || a instanceof Boolean)) {
            return repeat(b, Py.asLong(a));
        }
        if (a instanceof String || b instanceof String || a instanceof List<?> || b instanceof List<?>) {
            Object other = a instanceof String || a instanceof List<?> ? b : a;
            throw ChatTemplateException.typeError("can't multiply sequence by non-int of type "
                    + Py.repr(Py.typeName(other)));
        }
        throw unsupported("*", a, b);
    }

    private static Object repeat(Object sequence, long times) {
        int count = (int) Math.max(0, Math.min(times, Integer.MAX_VALUE));
        if (sequence instanceof String s) {
            return s.repeat(count);
        }
        List<?> list = (List<?>) sequence;
        List<Object> repeated = new ArrayList<>(list.size() * count);
        for (int i = 0; i < count; i++) {
            repeated.addAll(list);
        }
        return sequence instanceof PyTuple ? PyTuple.copyOf(repeated) : repeated;
    }

    static Object truediv(Object a, Object b) {
        failOnUndefined(a, b);
        if (Py.isNumber(a) && Py.isNumber(b)) {
            double divisor = Py.asDouble(b);
            if (divisor == 0) {
                throw ChatTemplateException.runtime("ZeroDivisionError",
                        Py.isFloat(a) || Py.isFloat(b) ? "float division by zero" : "division by zero");
            }
            if (Py.isInt(a) && Py.isInt(b) && (a instanceof BigInteger || b instanceof BigInteger)) {
                return new BigDecimal(Py.asBig(a)).divide(new BigDecimal(Py.asBig(b)), MathContext.DECIMAL64)
                        .doubleValue();
            }
            return Py.asDouble(a) / divisor;
        }
        throw unsupported("/", a, b);
    }

    static Object floordiv(Object a, Object b) {
        failOnUndefined(a, b);
        if (Py.isNumber(a) && Py.isNumber(b)) {
            if (Py.isFloat(a) || Py.isFloat(b)) {
                double divisor = Py.asDouble(b);
                if (divisor == 0) {
                    throw ChatTemplateException.runtime("ZeroDivisionError", "float floor division by zero");
                }
                return floatFloorDiv(Py.asDouble(a), divisor);
            }
            BigInteger divisor = Py.asBig(b);
            if (divisor.signum() == 0) {
                throw ChatTemplateException.runtime("ZeroDivisionError", "integer division or modulo by zero");
            }
            BigInteger[] qr = Py.asBig(a).divideAndRemainder(divisor);
            BigInteger quotient = qr[0];
            if (qr[1].signum() != 0 && qr[1].signum() != divisor.signum()) {
                quotient = quotient.subtract(BigInteger.ONE);
            }
            return Py.normalize(quotient);
        }
        throw unsupported("//", a, b);
    }

    /** CPython's float floor division, which works from fmod so that 1 // 0.1 is 9.0, not 10.0. */
    private static double floatFloorDiv(double x, double y) {
        double mod = x % y;
        double div = (x - mod) / y;
        if (mod != 0 && (y < 0) != (mod < 0)) {
            div -= 1.0;
        }
        if (div == 0) {
            return Math.copySign(0.0, x / y);
        }
        double floor = Math.floor(div);
        return div - floor > 0.5 ? floor + 1.0 : floor;
    }

    static Object mod(Object a, Object b) {
        if (a instanceof String format) {
            return PyFormat.percent(format, b);
        }
        failOnUndefined(a, b);
        if (Py.isNumber(a) && Py.isNumber(b)) {
            if (Py.isFloat(a) || Py.isFloat(b)) {
                double x = Py.asDouble(a);
                double y = Py.asDouble(b);
                if (y == 0) {
                    throw ChatTemplateException.runtime("ZeroDivisionError", "float modulo");
                }
                double r = x % y;
                if (r != 0 && (r < 0) != (y < 0)) {
                    r += y;
                }
                return r;
            }
            BigInteger divisor = Py.asBig(b);
            if (divisor.signum() == 0) {
                throw ChatTemplateException.runtime("ZeroDivisionError", "integer division or modulo by zero");
            }
            BigInteger r = Py.asBig(a).mod(divisor.abs());
            if (divisor.signum() < 0 && r.signum() != 0) {
                r = r.add(divisor);
            }
            return Py.normalize(r);
        }
        throw unsupported("%", a, b);
    }

    static Object pow(Object a, Object b) {
        failOnUndefined(a, b);
        if (Py.isNumber(a) && Py.isNumber(b)) {
            if (Py.asDouble(a) == 0 && Py.asDouble(b) < 0) {
                throw ChatTemplateException.runtime("ZeroDivisionError", "0.0 cannot be raised to a negative power");
            }
            if (Py.isFloat(a) || Py.isFloat(b) || Py.asBig(b).signum() < 0) {
                return Math.pow(Py.asDouble(a), Py.asDouble(b));
            }
            long exponent = Py.asLong(b);
            if (exponent > 100_000) {
                throw ChatTemplateException.runtime("OverflowError", "exponent too large");
            }
            return Py.normalize(Py.asBig(a).pow((int) exponent));
        }
        throw unsupported("** or pow()", a, b);
    }

    static Object negate(Object a) {
        if (a instanceof Undefined u) {
            throw u.error();
        }
        if (Py.isFloat(a)) {
            return -Py.asDouble(a);
        }
        if (Py.isInt(a) || a instanceof Boolean) {
            return Py.normalize(Py.asBig(a).negate());
        }
        throw ChatTemplateException.typeError("bad operand type for unary -: " + Py.repr(Py.typeName(a)));
    }

    static Object plus(Object a) {
        if (a instanceof Undefined u) {
            throw u.error();
        }
        if (Py.isFloat(a)) {
            return Py.asDouble(a);
        }
        if (Py.isInt(a) || a instanceof Boolean) {
            return Py.normalize(Py.asBig(a));
        }
        throw ChatTemplateException.typeError("bad operand type for unary +: " + Py.repr(Py.typeName(a)));
    }
}
