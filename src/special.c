/*
 * special.c -- elementwise special functions numpy does not have:
 * erf, erfc, erfinv, lgamma, digamma (float32 and float64).
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

static int validate(const char *fn, int op, int64_t count, const void *x, const void *out, size_t es)
{
    int st;
    if (op < CEXTEND_SPECIAL_ERF || op > CEXTEND_SPECIAL_DIGAMMA)
        return cx_illegal(fn, 1, "op", "must be a CEXTEND_SPECIAL_* value (0..4), got %d", op);
    if ((st = cx_check_size(fn, 2, "count", count)) ||
        (st = cx_check_vector(fn, "x", 0, x, 3, count, 2, "count", es)) ||
        (st = cx_check_vector(fn, "out", 0, out, 4, count, 2, "count", es)))
        return st;
    return 0;
}

int cextend_special_f64(int op, int64_t count, const double *x, double *out)
{
    int st = validate("cextend_special_f64", op, count, x, out, sizeof(double));
    if (st)
        return st;
    for (int64_t i = 0; i < count; ++i) {
        double v = x[i];
        switch (op) {
        case CEXTEND_SPECIAL_ERF: out[i] = erf(v); break;
        case CEXTEND_SPECIAL_ERFC: out[i] = erfc(v); break;
        case CEXTEND_SPECIAL_ERFINV: out[i] = cx_erfinv(v); break;
        case CEXTEND_SPECIAL_LGAMMA: out[i] = lgamma(v); break;
        default: out[i] = cx_digamma(v); break;
        }
    }
    return CEXTEND_OK;
}

int cextend_special_f32(int op, int64_t count, const float *x, float *out)
{
    int st = validate("cextend_special_f32", op, count, x, out, sizeof(float));
    if (st)
        return st;
    for (int64_t i = 0; i < count; ++i) {
        float v = x[i];
        switch (op) {
        case CEXTEND_SPECIAL_ERF: out[i] = erff(v); break;
        case CEXTEND_SPECIAL_ERFC: out[i] = erfcf(v); break;
        case CEXTEND_SPECIAL_ERFINV: out[i] = (float)cx_erfinv(v); break;
        case CEXTEND_SPECIAL_LGAMMA: out[i] = lgammaf(v); break;
        default: out[i] = (float)cx_digamma(v); break;
        }
    }
    return CEXTEND_OK;
}
