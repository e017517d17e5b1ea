/*
 * generic/rnn.c -- the fused LSTM and GRU cell steps for one REAL (see
 * cextend.h for the contracts).  The arithmetic is that of torch's CPU
 * cells, operation by operation (its LSTMCell and GRUCell in
 * aten/src/ATen/native/RNN.cpp, and the derivatives autograd takes of
 * them), so the values agree with torch's to a rounding or two.
 */

/* The operands of one call, so a part of the work is (struct, row, units). */
typedef struct {
    int64_t hidden;
    const REAL *ig, *hg, *ib, *hb;
    int64_t ldi, ldh;
    const REAL *prev;           /* cx (LSTM) or hx (GRU) */
    REAL *hy, *cy, *ws;
} CX_FN(cx_rnn_forward_args);

typedef struct {
    int64_t hidden;
    const REAL *grad_hy, *grad_cy, *cx, *cy, *ws;
    REAL *grad_gates, *grad_cx;         /* LSTM */
    REAL *grad_ig, *grad_hg, *grad_hx;  /* GRU */
} CX_FN(cx_rnn_backward_args);

/*
 * Each part works on at most CX_RNN_CHUNK units of one row at a time, in
 * simple loops without branches (the conditions are hoisted around them)
 * over restrict pointers, which the compiler vectorises; temporaries live
 * in small arrays on the stack.
 */

/* p[k] = x[k] + y[k] (+ b1[k]) (+ b2[k]): a gate's pre-activation. */
CX_INLINE void CX_FN(cx_gate_sum)(REAL *restrict p, const REAL *restrict x, const REAL *restrict y,
                                   const REAL *restrict b1, const REAL *restrict b2, int64_t m)
{
    for (int64_t k = 0; k < m; ++k)
        p[k] = x[k] + y[k];
    if (b1)
        for (int64_t k = 0; k < m; ++k)
            p[k] = p[k] + b1[k];
    if (b2)
        for (int64_t k = 0; k < m; ++k)
            p[k] = p[k] + b2[k];
}

/* p[k] = x[k] (+ b[k]) */
CX_INLINE void CX_FN(cx_gate_bias)(REAL *restrict p, const REAL *restrict x, const REAL *restrict b, int64_t m)
{
    if (b)
        for (int64_t k = 0; k < m; ++k)
            p[k] = x[k] + b[k];
    else
        memcpy(p, x, (size_t)m * sizeof(REAL));
}

CX_INLINE void CX_FN(cx_lstm_forward_part)(const CX_FN(cx_rnn_forward_args) *a, int64_t b, int64_t j0, int64_t j1)
{
    const int64_t H = a->hidden, o = b * H;
    const REAL *igr = a->ig + b * a->ldi, *hgr = a->hg + b * a->ldh;
    REAL *ws = a->ws ? a->ws + b * CX_LSTM_GATES * H : NULL;
    REAL buf[CX_LSTM_GATES][CX_RNN_CHUNK];
    for (int64_t c0 = j0; c0 < j1; c0 += CX_RNN_CHUNK) {
        const int64_t m = j1 - c0 < CX_RNN_CHUNK ? j1 - c0 : CX_RNN_CHUNK;
        for (int q = 0; q < CX_LSTM_GATES; ++q)
            CX_FN(cx_gate_sum)(buf[q], igr + q * H + c0, hgr + q * H + c0,
                               a->ib ? a->ib + q * H + c0 : NULL, a->hb ? a->hb + q * H + c0 : NULL, m);
        REAL *restrict pi = buf[0], *restrict pf = buf[1], *restrict pg = buf[2], *restrict po = buf[3];
        const REAL *restrict cx = a->prev + o + c0;
        REAL *restrict hy = a->hy + o + c0, *restrict cy = a->cy + o + c0;
        for (int64_t k = 0; k < m; ++k) {
            const REAL i = CX_SIGMOID(pi[k]), f = CX_SIGMOID(pf[k]), g = CX_TANH(pg[k]), og = CX_SIGMOID(po[k]);
            const REAL c = f * cx[k] + i * g;
            cy[k] = c;
            hy[k] = og * CX_TANH(c);
            pi[k] = i;
            pf[k] = f;
            pg[k] = g;
            po[k] = og;
        }
        if (ws)
            for (int q = 0; q < CX_LSTM_GATES; ++q)
                memcpy(ws + q * H + c0, buf[q], (size_t)m * sizeof(REAL));
    }
}

/*
 * The derivative of the forward above, as autograd composes it from the
 * forward's operations (sigmoid's backward is (grad * (1 - y)) * y,
 * tanh's grad * (1 - y * y), a product's grad * the other factor):
 *   dcy = grad_cy + (grad_hy * o) * (1 - tanh(cy)^2)
 *   di = dcy * g, df = dcy * cx, dg = dcy * i, do = grad_hy * tanh(cy)
 *   grad_gates = [di (1 - i) i, df (1 - f) f, dg (1 - g^2), do (1 - o) o]
 *   grad_cx = dcy * f
 * An absent gradient is an absent path, as in autograd: no 0 * tanh(cy)
 * term that a NaN or infinite cy would make NaN.
 */
CX_INLINE void CX_FN(cx_lstm_backward_part)(const CX_FN(cx_rnn_backward_args) *a, int64_t b, int64_t j0, int64_t j1)
{
    const int64_t H = a->hidden, o = b * H;
    const REAL *wsr = a->ws + b * CX_LSTM_GATES * H;
    REAL *ggr = a->grad_gates ? a->grad_gates + b * CX_LSTM_GATES * H : NULL;
    REAL dcy_buf[CX_RNN_CHUNK], dout_buf[CX_RNN_CHUNK], tanh_buf[CX_RNN_CHUNK];
    for (int64_t c0 = j0; c0 < j1; c0 += CX_RNN_CHUNK) {
        const int64_t m = j1 - c0 < CX_RNN_CHUNK ? j1 - c0 : CX_RNN_CHUNK;
        const REAL *restrict i = wsr + c0, *restrict f = wsr + H + c0, *restrict g = wsr + 2 * H + c0;
        const REAL *restrict og = wsr + 3 * H + c0;
        REAL *restrict dcy = dcy_buf, *restrict dout = dout_buf;
        const REAL *restrict gcy = a->grad_cy ? a->grad_cy + o + c0 : NULL;
        if (a->grad_hy) {
            const REAL *restrict ghy = a->grad_hy + o + c0;
            REAL *restrict t_buf = tanh_buf;
            if (a->cy) {
                const REAL *restrict cy = a->cy + o + c0;
                for (int64_t k = 0; k < m; ++k)
                    t_buf[k] = CX_TANH(cy[k]);
            } else {        /* cy as the forward computed it, to the bit */
                const REAL *restrict cx = a->cx + o + c0;
                for (int64_t k = 0; k < m; ++k)
                    t_buf[k] = CX_TANH(f[k] * cx[k] + i[k] * g[k]);
            }
            for (int64_t k = 0; k < m; ++k) {
                const REAL t = t_buf[k];
                dcy[k] = (ghy[k] * og[k]) * ((REAL)1 - t * t);
                dout[k] = ghy[k] * t;
            }
            if (gcy)
                for (int64_t k = 0; k < m; ++k)
                    dcy[k] = gcy[k] + dcy[k];
        } else if (gcy) {
            memcpy(dcy, gcy, (size_t)m * sizeof(REAL));
        } else {
            for (int64_t k = 0; k < m; ++k)
                dcy[k] = 0;
        }
        if (ggr) {
            const REAL *restrict cx = a->cx + o + c0;
            REAL *restrict gi = ggr + c0, *restrict gf = ggr + H + c0, *restrict gg = ggr + 2 * H + c0;
            REAL *restrict go = ggr + 3 * H + c0;
            for (int64_t k = 0; k < m; ++k) {
                const REAL di = dcy[k] * g[k], df = dcy[k] * cx[k], dg = dcy[k] * i[k];
                gi[k] = (di * ((REAL)1 - i[k])) * i[k];
                gf[k] = (df * ((REAL)1 - f[k])) * f[k];
                gg[k] = dg * ((REAL)1 - g[k] * g[k]);
            }
            if (a->grad_hy)
                for (int64_t k = 0; k < m; ++k)
                    go[k] = (dout[k] * ((REAL)1 - og[k])) * og[k];
            else
                for (int64_t k = 0; k < m; ++k)
                    go[k] = 0;
        }
        if (a->grad_cx) {
            REAL *restrict gcx = a->grad_cx + o + c0;
            for (int64_t k = 0; k < m; ++k)
                gcx[k] = dcy[k] * f[k];
        }
    }
}

/* torch's GRUCell: r and z from the sums of the gates, n = tanh(ig_n +
 * r * hg_n), hy = (hx - n) * z + n (biases added to their own gates first). */
CX_INLINE void CX_FN(cx_gru_forward_part)(const CX_FN(cx_rnn_forward_args) *a, int64_t b, int64_t j0, int64_t j1)
{
    const int64_t H = a->hidden, o = b * H;
    const REAL *igr = a->ig + b * a->ldi, *hgr = a->hg + b * a->ldh;
    REAL *ws = a->ws ? a->ws + b * CX_GRU_WORKSPACE * H : NULL;
    REAL in[CX_GRU_GATES][CX_RNN_CHUNK], hn[CX_GRU_GATES][CX_RNN_CHUNK];
    for (int64_t c0 = j0; c0 < j1; c0 += CX_RNN_CHUNK) {
        const int64_t m = j1 - c0 < CX_RNN_CHUNK ? j1 - c0 : CX_RNN_CHUNK;
        for (int q = 0; q < CX_GRU_GATES; ++q) {
            CX_FN(cx_gate_bias)(in[q], igr + q * H + c0, a->ib ? a->ib + q * H + c0 : NULL, m);
            CX_FN(cx_gate_bias)(hn[q], hgr + q * H + c0, a->hb ? a->hb + q * H + c0 : NULL, m);
        }
        /* r, z and n overwrite the input gates' sums */
        REAL *restrict ir = in[0], *restrict iz = in[1], *restrict i_n = in[2];
        const REAL *restrict hr = hn[0], *restrict hz = hn[1], *restrict h_n = hn[2];
        const REAL *restrict hx = a->prev + o + c0;
        REAL *restrict hy = a->hy + o + c0;
        for (int64_t k = 0; k < m; ++k) {
            const REAL r = CX_SIGMOID(hr[k] + ir[k]);
            const REAL z = CX_SIGMOID(hz[k] + iz[k]);
            const REAL n = CX_TANH(i_n[k] + h_n[k] * r);
            hy[k] = (hx[k] - n) * z + n;
            ir[k] = r;
            iz[k] = z;
            i_n[k] = n;
        }
        if (ws) {
            for (int q = 0; q < CX_GRU_GATES; ++q)
                memcpy(ws + q * H + c0, in[q], (size_t)m * sizeof(REAL));
            memcpy(ws + 3 * H + c0, hx, (size_t)m * sizeof(REAL));
            memcpy(ws + 4 * H + c0, h_n, (size_t)m * sizeof(REAL));
        }
    }
}

/*
 * The derivative of the GRU forward, as autograd composes it:
 *   dn = grad_hy - grad_hy * z, dz = grad_hy * (hx - n), grad_hx = grad_hy * z
 *   dpn = dn * (1 - n^2); dr = dpn * hg_n
 *   grad_input_gates  = [(dr (1 - r)) r, (dz (1 - z)) z, dpn]
 *   grad_hidden_gates = [(dr (1 - r)) r, (dz (1 - z)) z, dpn * r]
 */
CX_INLINE void CX_FN(cx_gru_backward_part)(const CX_FN(cx_rnn_backward_args) *a, int64_t b, int64_t j0, int64_t j1)
{
    const int64_t H = a->hidden, o = b * H;
    const REAL *wsr = a->ws + b * CX_GRU_WORKSPACE * H;
    REAL *gir = a->grad_ig ? a->grad_ig + b * CX_GRU_GATES * H : NULL;
    REAL *ghr = a->grad_hg ? a->grad_hg + b * CX_GRU_GATES * H : NULL;
    REAL t[4][CX_RNN_CHUNK];
    for (int64_t c0 = j0; c0 < j1; c0 += CX_RNN_CHUNK) {
        const int64_t m = j1 - c0 < CX_RNN_CHUNK ? j1 - c0 : CX_RNN_CHUNK;
        const REAL *restrict r = wsr + c0, *restrict z = wsr + H + c0, *restrict n = wsr + 2 * H + c0;
        const REAL *restrict hx = wsr + 3 * H + c0, *restrict hgn = wsr + 4 * H + c0;
        const REAL *restrict grad = a->grad_hy + o + c0;
        REAL *restrict dpr = t[0], *restrict dpz = t[1], *restrict dpn = t[2], *restrict gz = t[3];
        for (int64_t k = 0; k < m; ++k) {
            const REAL g = grad[k], zg = g * z[k];
            const REAL dn = g - zg, dz = g * (hx[k] - n[k]);
            const REAL pn = dn * ((REAL)1 - n[k] * n[k]);
            const REAL dr = pn * hgn[k];
            dpr[k] = (dr * ((REAL)1 - r[k])) * r[k];
            dpz[k] = (dz * ((REAL)1 - z[k])) * z[k];
            dpn[k] = pn;
            gz[k] = zg;
        }
        if (gir) {
            memcpy(gir + c0, dpr, (size_t)m * sizeof(REAL));
            memcpy(gir + H + c0, dpz, (size_t)m * sizeof(REAL));
            memcpy(gir + 2 * H + c0, dpn, (size_t)m * sizeof(REAL));
        }
        if (ghr) {
            memcpy(ghr + c0, dpr, (size_t)m * sizeof(REAL));
            memcpy(ghr + H + c0, dpz, (size_t)m * sizeof(REAL));
            REAL *restrict out = ghr + 2 * H + c0;
            for (int64_t k = 0; k < m; ++k)
                out[k] = dpn[k] * r[k];
        }
        if (a->grad_hx)
            memcpy(a->grad_hx + o + c0, gz, (size_t)m * sizeof(REAL));
    }
}

/* part(args, row, j0, j1) over the flattened units [start, end), row by row;
 * one function per kernel and instruction set (see rnn.c). */
#define CX_RNN_RANGE(part, args_type)                                                     \
    {                                                                                     \
        const int64_t H = a->hidden;                                                      \
        for (int64_t e = start; e < end;) {                                               \
            const int64_t b = e / H, j0 = e - b * H;                                      \
            const int64_t j1 = end - b * H < H ? end - b * H : H;                         \
            part(a, b, j0, j1);                                                           \
            e = b * H + j1;                                                               \
        }                                                                                 \
    }

#define CX_RNN_RANGES(kernel, args_type)                                                  \
    static void CX_FN(kernel##_range)(const args_type *a, int64_t start, int64_t end)     \
        CX_RNN_RANGE(CX_FN(kernel##_part), args_type)                                     \
    CX_RNN_AVX2_RANGE(kernel, args_type)

#if CX_RNN_AVX2
#define CX_RNN_AVX2_RANGE(kernel, args_type)                                              \
    CX_TARGET_AVX2 static void CX_FN(kernel##_range_avx2)(const args_type *a, int64_t start, int64_t end) \
        CX_RNN_RANGE(CX_FN(kernel##_part), args_type)
#else
#define CX_RNN_AVX2_RANGE(kernel, args_type)
#endif

CX_RNN_RANGES(cx_lstm_forward, CX_FN(cx_rnn_forward_args))
CX_RNN_RANGES(cx_lstm_backward, CX_FN(cx_rnn_backward_args))
CX_RNN_RANGES(cx_gru_forward, CX_FN(cx_rnn_forward_args))
CX_RNN_RANGES(cx_gru_backward, CX_FN(cx_rnn_backward_args))

/* Runs kernel over all batch * hidden units: split across threads (each
 * element is independent, so any split gives the same bits). */
#if CX_RNN_AVX2
#define CX_RNN_PICK(kernel) (cx_rnn_use_avx2() ? CX_FN(kernel##_range_avx2) : CX_FN(kernel##_range))
#else
#define CX_RNN_PICK(kernel) CX_FN(kernel##_range)
#endif

#ifdef _OPENMP
#define CX_RNN_RUN(kernel, args, total)                                                   \
    do {                                                                                  \
        void (*range_)(const __typeof__(*(args)) *, int64_t, int64_t) = CX_RNN_PICK(kernel); \
        const int threads_ = cx_threads_for_elements(CX_RNN_COST * (double)(total));       \
        if (threads_ <= 1) {                                                              \
            range_(args, 0, (total));                                                     \
        } else {                                                                          \
            _Pragma("omp parallel num_threads(threads_)")                                 \
            {                                                                             \
                int64_t s_, t_;                                                           \
                cx_rnn_share((total), omp_get_thread_num(), omp_get_num_threads(), &s_, &t_); \
                range_(args, s_, t_);                                                     \
            }                                                                             \
        }                                                                                 \
    } while (0)
#else
#define CX_RNN_RUN(kernel, args, total) CX_RNN_PICK(kernel)(args, 0, (total))
#endif

int CX_FN(cextend_lstm_cell_forward)(int64_t batch, int64_t hidden, const REAL *input_gates, int64_t ld_input,
                                     const REAL *hidden_gates, int64_t ld_hidden, const REAL *input_bias,
                                     const REAL *hidden_bias, const REAL *cx, REAL *hy, REAL *cy,
                                     REAL *workspace)
{
    static const char fn[] = "cextend_lstm_cell_forward_" CX_STR(SFX);
    int st = cx_validate_lstm_forward(fn, sizeof(REAL), batch, hidden, input_gates, ld_input, hidden_gates,
                                      ld_hidden, input_bias, hidden_bias, cx, hy, cy, workspace);
    if (st)
        return st;
    const int64_t total = batch * hidden;
    if (total == 0)
        return CEXTEND_OK;
    const CX_FN(cx_rnn_forward_args) args = {hidden, input_gates, hidden_gates, input_bias, hidden_bias,
                                             ld_input, ld_hidden, cx, hy, cy, workspace};
    CX_RNN_RUN(cx_lstm_forward, &args, total);
    return CEXTEND_OK;
}

int CX_FN(cextend_lstm_cell_backward)(int64_t batch, int64_t hidden, const REAL *grad_hy, const REAL *grad_cy,
                                      const REAL *cx, const REAL *cy, const REAL *workspace, REAL *grad_gates,
                                      REAL *grad_cx)
{
    static const char fn[] = "cextend_lstm_cell_backward_" CX_STR(SFX);
    int st = cx_validate_lstm_backward(fn, sizeof(REAL), batch, hidden, grad_hy, grad_cy, cx, cy, workspace,
                                       grad_gates, grad_cx);
    if (st)
        return st;
    const int64_t total = batch * hidden;
    if (total == 0 || (grad_gates == NULL && grad_cx == NULL))
        return CEXTEND_OK;
    const CX_FN(cx_rnn_backward_args) args = {hidden, grad_hy, grad_cy, cx, cy, workspace, grad_gates, grad_cx,
                                              NULL, NULL, NULL};
    CX_RNN_RUN(cx_lstm_backward, &args, total);
    return CEXTEND_OK;
}

int CX_FN(cextend_gru_cell_forward)(int64_t batch, int64_t hidden, const REAL *input_gates, int64_t ld_input,
                                    const REAL *hidden_gates, int64_t ld_hidden, const REAL *input_bias,
                                    const REAL *hidden_bias, const REAL *hx, REAL *hy, REAL *workspace)
{
    static const char fn[] = "cextend_gru_cell_forward_" CX_STR(SFX);
    int st = cx_validate_gru_forward(fn, sizeof(REAL), batch, hidden, input_gates, ld_input, hidden_gates,
                                     ld_hidden, input_bias, hidden_bias, hx, hy, workspace);
    if (st)
        return st;
    const int64_t total = batch * hidden;
    if (total == 0)
        return CEXTEND_OK;
    const CX_FN(cx_rnn_forward_args) args = {hidden, input_gates, hidden_gates, input_bias, hidden_bias,
                                             ld_input, ld_hidden, hx, hy, NULL, workspace};
    CX_RNN_RUN(cx_gru_forward, &args, total);
    return CEXTEND_OK;
}

int CX_FN(cextend_gru_cell_backward)(int64_t batch, int64_t hidden, const REAL *grad_hy, const REAL *workspace,
                                     REAL *grad_input_gates, REAL *grad_hidden_gates, REAL *grad_hx)
{
    static const char fn[] = "cextend_gru_cell_backward_" CX_STR(SFX);
    int st = cx_validate_gru_backward(fn, sizeof(REAL), batch, hidden, grad_hy, workspace, grad_input_gates,
                                      grad_hidden_gates, grad_hx);
    if (st)
        return st;
    const int64_t total = batch * hidden;
    if (total == 0 || (grad_input_gates == NULL && grad_hidden_gates == NULL && grad_hx == NULL))
        return CEXTEND_OK;
    const CX_FN(cx_rnn_backward_args) args = {hidden, grad_hy, NULL, NULL, NULL, workspace, NULL, NULL,
                                              grad_input_gates, grad_hidden_gates, grad_hx};
    CX_RNN_RUN(cx_gru_backward, &args, total);
    return CEXTEND_OK;
}

#undef CX_RNN_RANGE
#undef CX_RNN_RANGES
#undef CX_RNN_AVX2_RANGE
#undef CX_RNN_PICK
#undef CX_RNN_RUN
