package dev.crucible.runner.study;

/**
 * Standard normal functions accurate to about 1e-15 relative error, including far tails, which truncated
 * Gaussian kernels need: a kernel narrowed to 1/100 of its range puts the range ends up to 100 sigma away.
 * The JDK has no erf; these are written from the textbook series and continued fraction.
 */
final class NormalMath {

    private static final double SQRT2 = Math.sqrt(2.0);
    private static final double SQRT_PI = Math.sqrt(Math.PI);
    private static final double LOG_SQRT_2PI = 0.5 * Math.log(2.0 * Math.PI);
    private static final double LOG_SQRT_PI = 0.5 * Math.log(Math.PI);
    /** Below this argument the series for erf converges fast; above it the continued fraction for erfc does. */
    private static final double SERIES_LIMIT = 1.5;

    private NormalMath() {
    }

    /** erf(x) for x >= 0 from the all-positive series (2/sqrt(pi)) e^{-x^2} sum (2x^2)^n x / (1*3*...*(2n+1)). */
    private static double erfSeries(double x) {
        double x2 = x * x;
        double term = x;
        double sum = x;
        for (int n = 0; n < 200 && term > 1e-17 * sum; n++) {
            term *= 2.0 * x2 / (2 * n + 3);
            sum += term;
        }
        return 2.0 / SQRT_PI * Math.exp(-x2) * sum;
    }

    /**
     * The continued fraction x + (1/2)/(x + 1/(x + (3/2)/(x + ...))) for x >= 1.5, evaluated with the modified
     * Lentz method; erfc(x) = e^{-x^2} / (sqrt(pi) * fraction). Kept separate so log erfc never underflows.
     */
    private static double erfcFraction(double x) {
        final double tiny = 1e-300;
        double f = x;
        double c = f;
        double d = 0.0;
        for (int n = 1; n < 500; n++) {
            double a = 0.5 * n;
            d = x + a * d;
            if (d == 0.0) {
                d = tiny;
            }
            c = x + a / c;
            if (c == 0.0) {
                c = tiny;
            }
            d = 1.0 / d;
            double delta = c * d;
            f *= delta;
            if (Math.abs(delta - 1.0) < 1e-16) {
                break;
            }
        }
        return f;
    }

    static double erf(double x) {
        if (x < 0) {
            return -erf(-x);
        }
        return x < SERIES_LIMIT ? erfSeries(x) : 1.0 - erfc(x);
    }

    static double erfc(double x) {
        if (x < 0) {
            return 2.0 - erfc(-x);
        }
        if (x < SERIES_LIMIT) {
            return 1.0 - erfSeries(x);
        }
        return Math.exp(-x * x) / (SQRT_PI * erfcFraction(x));
    }

    /** log erfc(x), finite for every finite x (erfc itself underflows past x ~ 27). */
    static double logErfc(double x) {
        if (x < SERIES_LIMIT) {
            return Math.log(erfc(x));
        }
        return -x * x - LOG_SQRT_PI - Math.log(erfcFraction(x));
    }

    /** Standard normal CDF. */
    static double cdf(double z) {
        return 0.5 * erfc(-z / SQRT2);
    }

    /** log of the standard normal CDF, accurate in both tails. */
    static double logCdf(double z) {
        if (z > 0) {
            return Math.log1p(-0.5 * erfc(z / SQRT2));
        }
        return Math.log(0.5) + logErfc(-z / SQRT2);
    }

    /** log of the standard normal density. */
    static double logPdf(double z) {
        return -0.5 * z * z - LOG_SQRT_2PI;
    }

    /** log(cdf(b) - cdf(a)) for a < b without cancellation, including when both lie in the same far tail. */
    static double logMass(double a, double b) {
        if (!(a < b)) {
            return Double.NEGATIVE_INFINITY;
        }
        if (a >= 0) {
            return logMass(-b, -a);
        }
        if (b <= 0) {
            double logB = logCdf(b);
            return logB + log1mExp(logCdf(a) - logB);
        }
        // The interval straddles 0: sum the two halves, each from erf, which is accurate near 0.
        return Math.log(0.5 * (erf(b / SQRT2) + erf(-a / SQRT2)));
    }

    /** log(1 - e^x) for x <= 0, choosing the formula that keeps precision. */
    static double log1mExp(double x) {
        return x > -Math.log(2.0) ? Math.log(-Math.expm1(x)) : Math.log1p(-Math.exp(x));
    }

    /**
     * Inverse of the standard normal CDF: P. J. Acklam's rational approximation (about 1e-9 relative) refined by
     * two Halley steps against {@link #cdf}, which brings it to the precision of cdf itself.
     */
    static double inverseCdf(double p) {
        if (p <= 0) {
            return Double.NEGATIVE_INFINITY;
        }
        if (p >= 1) {
            return Double.POSITIVE_INFINITY;
        }
        double x = acklam(p);
        for (int i = 0; i < 2; i++) {
            // cdf(x) - p, computed from the tail that is small so the difference keeps its digits.
            double error = p < 0.5 ? cdf(x) - p : (1.0 - p) - cdf(-x);
            double u = error * Math.sqrt(2 * Math.PI) * Math.exp(0.5 * x * x);
            if (!Double.isFinite(u)) {
                break;
            }
            x = x - u / (1 + 0.5 * x * u);
        }
        return x;
    }

    private static double acklam(double p) {
        final double pLow = 0.02425;
        if (p < pLow) {
            double q = Math.sqrt(-2 * Math.log(p));
            return tailNumerator(q) / tailDenominator(q);
        }
        if (p > 1 - pLow) {
            double q = Math.sqrt(-2 * Math.log1p(-p));
            return -tailNumerator(q) / tailDenominator(q);
        }
        double q = p - 0.5;
        double r = q * q;
        double num = (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r - 2.759285104469687e+02) * r
                + 1.383577518672690e+02) * r - 3.066479806614716e+01) * r + 2.506628277459239e+00) * q;
        double den = ((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r - 1.556989798598866e+02) * r
                + 6.680131188771972e+01) * r - 1.328068155288572e+01) * r + 1;
        return num / den;
    }

    private static double tailNumerator(double q) {
        return ((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q - 2.400758277161838e+00) * q
                - 2.549732539343734e+00) * q + 4.374664141464968e+00) * q + 2.938163982698783e+00;
    }

    private static double tailDenominator(double q) {
        return (((7.784695709041462e-03 * q + 3.224671290700398e-01) * q + 2.445134137142996e+00) * q
                + 3.754408661907416e+00) * q + 1;
    }
}
