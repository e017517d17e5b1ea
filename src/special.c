/*
 * special.c -- elementwise special functions numpy does not have:
 * erf, erfc, erfinv, lgamma, digamma, sinc (float32 and float64).
 *
 * Contract: out[i] = f(x[i]) for i < count, x and out contiguous; out may
 * be x exactly (in place).  Args: 1 op (a CEXTEND_SPECIAL_* value),
 * 2 count, 3 x, 4 out.  float32 uses libm's float functions where libm has
 * them (erff, erfcf, lgammaf), as torch's CPU kernels do, and computes the
 * others in double before rounding once.
 */
#include <math.h>

#include "internal.h"

static const double CX_PI = 3.14159265358979323846;

/*
 * erfinv: a rational first guess (Giles, "Approximating the erfinv
 * function", 2010: |error| < 4e-7), then two Newton steps on erf(y) = x,
 * each of which squares the relative error, so double precision is reached.
 */
static double cx_erfinv(double x)
{
    if (isnan(x) || x < -1.0 || x > 1.0)
        return NAN;
    if (x == 1.0)
        return INFINITY;
    if (x == -1.0)
        return -INFINITY;
    double w = -log((1.0 - x) * (1.0 + x));
    double p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    double y = p * x;
    const double two_over_sqrt_pi = 2.0 / sqrt(CX_PI);
    for (int step = 0; step < 2; ++step) {
        double slope = two_over_sqrt_pi * exp(-y * y);
        if (slope == 0.0)
            break;
        y -= (erf(y) - x) / slope;
    }
    return y;
}

/*
 * digamma (psi): the reflection formula for negative x, the recurrence
 * psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series
 * log x - 1/(2x) - sum B_2k / (2k x^2k).  Poles (0 and negative integers)
 * give -inf/+inf at 0 (sign from the side of zero) and NaN elsewhere, as torch.
 */
static double cx_digamma(double x)
{
    if (isnan(x))
        return x;
    if (x == 0.0)
        return signbit(x) ? INFINITY : -INFINITY;
    if (x < 0.0) {
        if (x == trunc(x))
            return NAN;
        double integral;
        double fraction = modf(x, &integral);
        /* tan(pi * fraction) is accurate where tan(pi * x) is not. */
        return cx_digamma(1.0 - x) - CX_PI / tan(CX_PI * fraction);
    }
    double result = 0.0;
    while (x < 10.0) {
        result -= 1.0 / x;
        x += 1.0;
    }
    if (isinf(x))
        return x;
    /* Bernoulli terms B_2k / (2k): 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12. */
    static const double terms[] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132,
                                   -691.0 / 32760, 1.0 / 12};
    double z = 1.0 / (x * x);
    double series = 0.0;
    for (int k = (int)(sizeof terms / sizeof terms[0]) - 1; k >= 0; --k)
        series = series * z + terms[k];
    return result + log(x) - 0.5 / x - z * series;
}

/*
 * Hurwitz zeta(s, q) = sum_k (q + k)^-s for an integer s > 1: the first
 * terms directly until q + k >= 9, then the Euler-Maclaurin tail, whose
 * Bernoulli terms fall below double precision after a dozen.
 * q a non-positive integer is a pole (+inf), -inf included; +inf gives NaN
 * as torch's does.
 */
static double cx_hurwitz_zeta(double s, double q)
{
    if (isnan(q))
        return q;
    if (q <= 0.0 && q == floor(q))
        return INFINITY;
    if (isinf(q))
        return NAN;         /* torch's (Cephes') series meets 0/0 at +inf; -inf is a pole above */
    double sum = 0.0;
    double a = q;
    int terms = 0;
    while (a < 9.0 || terms < 9) {
        double term = pow(a, -s);
        sum += term;
        a += 1.0;
        ++terms;
        if (a > 9.0 && terms >= 9 && fabs(term) <= 1e-17 * fabs(sum))
            return sum;
    }
    /* B_2j / (2j)! for j = 1..12 */
    static const double bernoulli[] = {
        1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0, 1.0 / 47900160.0,
        -1.0 / 1307674368000.0 * 691.0, 1.0 / 74724249600.0,
        -3617.0 / 10670622842880000.0, 43867.0 / 5109094217170944000.0,
        -174611.0 / 802857662698291200000.0, 77683.0 / 14101100039391805440000.0,
        -236364091.0 / 1693824136731743669452800000.0};
    sum += pow(a, 1.0 - s) / (s - 1.0) + 0.5 * pow(a, -s);
    double rising = s;                 /* s (s + 1) ... (s + 2j - 2) */
    double power = pow(a, -s - 1.0);   /* a^(-s - 2j + 1) */
    for (int j = 0; j < (int)(sizeof bernoulli / sizeof bernoulli[0]); ++j) {
        double term = bernoulli[j] * rising * power;
        sum += term;
        if (fabs(term) <= 1e-17 * fabs(sum))
            break;
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
        power /= a * a;
    }
    return sum;
}

/*
 * trigamma (polygamma 1) as torch computes it, so results agree to the bit:
 * reflection below 1/2, six steps of psi'(x) = psi'(x + 1) + 1/x^2, then the
 * asymptotic series.  (Its error, about 1e-10, is torch's.)
 */
static double cx_trigamma(double x)
{
    double sign = 1.0;
    double result = 0.0;
    if (x < 0.5) {
        sign = -1.0;
        double s = sin(CX_PI * x);
        result -= (CX_PI * CX_PI) / (s * s);
        x = 1.0 - x;
    }
    for (int i = 0; i < 6; ++i) {
        result += 1.0 / (x * x);
        x += 1.0;
    }
    double ixx = 1.0 / (x * x);
    result += (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx * (1.0 / 42.0)))) / x;
    return sign * result;
}

/* polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 2; digamma and trigamma below. */
static double cx_polygamma(int64_t n, double x)
{
    if (n == 0)
        return cx_digamma(x);
    if (n == 1)
        return cx_trigamma(x);
    double factorial = 1.0;
    for (int64_t k = 2; k <= n; ++k)
        factorial *= (double)k;
    double sign = (n % 2) ? 1.0 : -1.0;
    return sign * factorial * cx_hurwitz_zeta((double)(n + 1), x);
}

static int validate(const char *fn, int op, int64_t count, const void *x, const void *out, size_t es)
{
    int st;
    if (op < 0 || op >= CEXTEND_SPECIAL_COUNT)
        return cx_illegal(fn, 1, "op", "must be a CEXTEND_SPECIAL_* value (0..%d), got %d",
                          CEXTEND_SPECIAL_COUNT - 1, op);
    if ((st = cx_check_size(fn, 2, "count", count)) ||
        (st = cx_check_vector(fn, "x", 0, x, 3, count, 2, "count", es)) ||
        (st = cx_check_vector(fn, "out", 0, out, 4, count, 2, "count", es)))
        return st;
    return 0;
}

/* sinc as torch's kernel computes it: the product pi * x rounded in the
 * argument's own precision, then sin(p) / p; exactly 1 at 0. */
static double cx_sinc(double x)
{
    if (x == 0.0)
        return 1.0;
    const double p = CX_PI * x;
    return sin(p) / p;
}

static float cx_sincf(float x)
{
    if (x == 0.0f)
        return 1.0f;
    const float p = (float)CX_PI * x;
    return sinf(p) / p;
}

/* One loop per function (the switch outside the loop, so each compiles
 * to a tight call loop over libm). */
#define CX_SPECIAL_LOOP(expr)                       \
    do {                                            \
        for (int64_t i = 0; i < count; ++i)         \
            out[i] = (expr);                        \
    } while (0)

int cextend_special_f64(int op, int64_t count, const double *x, double *out)
{
    int st = validate("cextend_special_f64", op, count, x, out, sizeof(double));
    if (st)
        return st;
    switch (op) {
    case CEXTEND_SPECIAL_ERF: CX_SPECIAL_LOOP(erf(x[i])); break;
    case CEXTEND_SPECIAL_ERFC: CX_SPECIAL_LOOP(erfc(x[i])); break;
    case CEXTEND_SPECIAL_ERFINV: CX_SPECIAL_LOOP(cx_erfinv(x[i])); break;
    case CEXTEND_SPECIAL_LGAMMA: CX_SPECIAL_LOOP(lgamma(x[i])); break;
    case CEXTEND_SPECIAL_SINC: CX_SPECIAL_LOOP(cx_sinc(x[i])); break;
    default: CX_SPECIAL_LOOP(cx_digamma(x[i])); break;
    }
    return CEXTEND_OK;
}

int cextend_special_f32(int op, int64_t count, const float *x, float *out)
{
    int st = validate("cextend_special_f32", op, count, x, out, sizeof(float));
    if (st)
        return st;
    switch (op) {
    case CEXTEND_SPECIAL_ERF: CX_SPECIAL_LOOP(erff(x[i])); break;
    case CEXTEND_SPECIAL_ERFC: CX_SPECIAL_LOOP(erfcf(x[i])); break;
    case CEXTEND_SPECIAL_ERFINV: CX_SPECIAL_LOOP((float)cx_erfinv(x[i])); break;
    case CEXTEND_SPECIAL_LGAMMA: CX_SPECIAL_LOOP(lgammaf(x[i])); break;
    case CEXTEND_SPECIAL_SINC: CX_SPECIAL_LOOP(cx_sincf(x[i])); break;
    default: CX_SPECIAL_LOOP((float)cx_digamma(x[i])); break;
    }
    return CEXTEND_OK;
}

static int validate_polygamma(const char *fn, int64_t n, int64_t count, const void *x, const void *out,
                              size_t es)
{
    int st;
    if (n < 0)
        return cx_illegal(fn, 1, "n", "polygamma(n, x) does not support negative n, got %lld", (long long)n);
    if ((st = cx_check_size(fn, 2, "count", count)) ||
        (st = cx_check_vector(fn, "x", 0, x, 3, count, 2, "count", es)) ||
        (st = cx_check_vector(fn, "out", 0, out, 4, count, 2, "count", es)))
        return st;
    return 0;
}

int cextend_polygamma_f64(int64_t n, int64_t count, const double *x, double *out)
{
    int st = validate_polygamma("cextend_polygamma_f64", n, count, x, out, sizeof(double));
    if (st)
        return st;
    for (int64_t i = 0; i < count; ++i)
        out[i] = cx_polygamma(n, x[i]);
    return CEXTEND_OK;
}

int cextend_polygamma_f32(int64_t n, int64_t count, const float *x, float *out)
{
    int st = validate_polygamma("cextend_polygamma_f32", n, count, x, out, sizeof(float));
    if (st)
        return st;
    for (int64_t i = 0; i < count; ++i)
        out[i] = (float)cx_polygamma(n, (double)x[i]);
    return CEXTEND_OK;
}
