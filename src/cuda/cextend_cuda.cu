/*
 * cextend_cuda.cu -- cextend's CUDA kernels (see the CUDA section of
 * cextend.h).  Built by nvcc into its own shared library, together with the
 * CPU library's status.c and validate.c (compiled by gcc), so arguments are
 * checked, and reported, exactly as the CPU entry points do.
 *
 * Every CUDA runtime call and kernel launch is checked; a failure returns
 * CEXTEND_ERR_CUDA with CUDA's message, never aborts.  Reductions (db, sum)
 * add in a fixed order with no atomics, so results are deterministic.
 */
#include <cuda_runtime.h>

#include "../internal.h"

namespace {

constexpr int kThreads = 256;
constexpr int kTile = 64;       /* a block computes a kTile x kTile tile of C */
constexpr int kDepth = 16;      /* k step held in shared memory */

int cuda_failed(const char *fn, cudaError_t error)
{
    return cx_fail(CEXTEND_ERR_CUDA, fn, "CUDA error %d (%s): %s", (int)error, cudaGetErrorName(error),
                   cudaGetErrorString(error));
}

#define CUDA_CALL(fn, call)                                                                        \
    do {                                                                                           \
        cudaError_t error_ = (call);                                                               \
        if (error_ != cudaSuccess)                                                                 \
            return cuda_failed(fn, error_);                                                        \
    } while (0)

/* A launch is checked twice: its configuration now, its execution later
 * (asynchronous errors surface on the next runtime call, also checked). */
#define CUDA_LAUNCHED(fn) CUDA_CALL(fn, cudaGetLastError())

int blocks_for(int64_t count)
{
    int64_t blocks = (count + kThreads - 1) / kThreads;
    return (int)(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

/* C[M x N] = A[M x K] . B[K x N] (+ bias[N]); A(i,p) = a[i*rsa + p*csa],
 * B(p,j) = b[p*rsb + j*csb], C row-major with ldc.  Each of the 256
 * threads owns a 4 x 4 block of outputs, rows ty + 16 r, columns tx + 16 c,
 * so shared-memory reads are broadcast (A) or consecutive (B). */
template <typename T>
__global__ void gemm_kernel(int64_t M, int64_t N, int64_t K, const T *__restrict__ a, int64_t rsa,
                            int64_t csa, const T *__restrict__ b, int64_t rsb, int64_t csb,
                            const T *__restrict__ bias, T *__restrict__ c, int64_t ldc)
{
    __shared__ T as[kDepth][kTile + 1];
    __shared__ T bs[kDepth][kTile];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t row0 = (int64_t)blockIdx.x * kTile, col0 = (int64_t)blockIdx.y * kTile;
    T acc[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int q = 0; q < 4; ++q)
            acc[r][q] = T(0);
    for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
        for (int i = threadIdx.x; i < kTile * kDepth; i += kThreads) {
            const int r = i / kDepth, p = i % kDepth;
            const int64_t gr = row0 + r, gp = k0 + p;
            as[p][r] = (gr < M && gp < K) ? a[gr * rsa + gp * csa] : T(0);
        }
        for (int i = threadIdx.x; i < kTile * kDepth; i += kThreads) {
            const int p = i / kTile, q = i % kTile;
            const int64_t gp = k0 + p, gq = col0 + q;
            bs[p][q] = (gp < K && gq < N) ? b[gp * rsb + gq * csb] : T(0);
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < kDepth; ++p) {
            T av[4], bv[4];
#pragma unroll
            for (int r = 0; r < 4; ++r)
                av[r] = as[p][ty + 16 * r];
#pragma unroll
            for (int q = 0; q < 4; ++q)
                bv[q] = bs[p][tx + 16 * q];
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    acc[r][q] = fma(av[r], bv[q], acc[r][q]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const int64_t row = row0 + ty + 16 * r;
        if (row >= M)
            continue;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int64_t col = col0 + tx + 16 * q;
            if (col < N)
                c[row * ldc + col] = bias ? acc[r][q] + bias[col] : acc[r][q];
        }
    }
}

template <typename T>
int gemm(const char *fn, int64_t M, int64_t N, int64_t K, const T *a, int64_t rsa, int64_t csa,
         const T *b, int64_t rsb, int64_t csb, const T *bias, T *c, int64_t ldc)
{
    if (M == 0 || N == 0)
        return CEXTEND_OK;
    const int64_t col_tiles = (N + kTile - 1) / kTile, row_tiles = (M + kTile - 1) / kTile;
    if (col_tiles > 65535 || row_tiles > 2147483647LL)
        return cx_fail(CEXTEND_ERR_CUDA, fn, "a %lld x %lld output is too large for one launch",
                       (long long)M, (long long)N);
    gemm_kernel<T><<<dim3((unsigned)row_tiles, (unsigned)col_tiles), kThreads>>>(
        M, N, K, a, rsa, csa, b, rsb, csb, bias, c, ldc);
    CUDA_LAUNCHED(fn);
    return CEXTEND_OK;
}

/* sums[j] = sum_i A(i, j), one thread per column, rows in order. */
template <typename T>
__global__ void column_sums_kernel(int64_t M, int64_t N, const T *a, int64_t rs, int64_t cs, T *sums)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < N; j += (int64_t)gridDim.x * blockDim.x) {
        T sum = T(0);
        for (int64_t i = 0; i < M; ++i)
            sum += a[i * rs + j * cs];
        sums[j] = sum;
    }
}

template <typename T>
int linear_forward(const char *fn, int64_t n, int64_t k, int64_t m, const T *x, int64_t ldx, int transx,
                   const T *w, int64_t ldw, int transw, const T *b, T *y, int64_t ldy)
{
    int st = cx_validate_linear_forward(fn, sizeof(T), n, k, m, x, ldx, transx, w, ldw, transw, b, y, ldy);
    if (st)
        return st;
    int64_t rsx, csx, rsw, csw;
    cx_strides(ldx, transx, &rsx, &csx);
    cx_strides(ldw, transw, &rsw, &csw);
    return gemm<T>(fn, n, m, k, x, rsx, csx, w, csw, rsw, b, y, ldy);     /* B = w^T */
}

template <typename T>
int linear_backward(const char *fn, int64_t n, int64_t k, int64_t m, const T *dy, int64_t lddy, int transdy,
                    const T *x, int64_t ldx, int transx, const T *w, int64_t ldw, int transw,
                    T *dx, int64_t lddx, T *dw, int64_t lddw, T *db)
{
    int st = cx_validate_linear_backward(fn, sizeof(T), n, k, m, dy, lddy, transdy, x, ldx, transx,
                                         w, ldw, transw, dx, lddx, dw, lddw, db);
    if (st)
        return st;
    int64_t rsdy, csdy, rsx, csx, rsw, csw;
    cx_strides(lddy, transdy, &rsdy, &csdy);
    cx_strides(ldx, transx, &rsx, &csx);
    cx_strides(ldw, transw, &rsw, &csw);
    if (dx && (st = gemm<T>(fn, n, k, m, dy, rsdy, csdy, w, rsw, csw, (const T *)nullptr, dx, lddx)))
        return st;
    if (dw && (st = gemm<T>(fn, m, k, n, dy, csdy, rsdy, x, rsx, csx, (const T *)nullptr, dw, lddw)))
        return st;
    if (db && m > 0) {
        column_sums_kernel<T><<<blocks_for(m), kThreads>>>(n, m, dy, rsdy, csdy, db);
        CUDA_LAUNCHED(fn);
    }
    return CEXTEND_OK;
}

#define GRID_STRIDE(i, count)                                                                      \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (count);                   \
         i += (int64_t)gridDim.x * blockDim.x)

template <typename T>
__global__ void add_kernel(int64_t count, const T *a, const T *b, T *out)
{
    GRID_STRIDE(i, count) out[i] = a[i] + b[i];
}

template <typename T>
__global__ void copy2_kernel(int64_t count, const T *src, T *first, T *second)
{
    GRID_STRIDE(i, count)
    {
        const T v = src[i];
        if (first)
            first[i] = v;
        if (second)
            second[i] = v;
    }
}

template <typename T>
__global__ void scale_kernel(int64_t count, const T *x, T c, T *out)
{
    GRID_STRIDE(i, count) out[i] = x[i] * c;
}

template <typename T>
__global__ void fill_kernel(int64_t count, T value, T *out)
{
    GRID_STRIDE(i, count) out[i] = value;
}

template <typename T>
__global__ void axpy_kernel(int64_t count, T alpha, const T *x, T *y)
{
    GRID_STRIDE(i, count) y[i] = fma(alpha, x[i], y[i]);
}

template <typename T>
__global__ void binary_kernel(int op, int64_t count, const T *a, const T *b, T s, int reversed, T *out)
{
    GRID_STRIDE(i, count)
    {
        T lhs = a[i], rhs = b ? b[i] : s;
        if (reversed) {
            const T t = lhs;
            lhs = rhs;
            rhs = t;
        }
        out[i] = op == 0 ? lhs + rhs : op == 1 ? lhs - rhs : lhs * rhs;
    }
}

/* One block per output; each thread sums a fixed stride of the reduced
 * axis in order, then a fixed shared-memory tree: deterministic. */
template <typename T>
__global__ void sum_kernel(int64_t outer, int64_t reduce, int64_t inner, const T *x, T *out)
{
    __shared__ T partial[kThreads];
    for (int64_t o = blockIdx.x; o < outer * inner; o += gridDim.x) {
        const int64_t base = (o / inner) * reduce * inner + o % inner;
        T sum = T(0);
        for (int64_t r = threadIdx.x; r < reduce; r += kThreads)
            sum += x[base + r * inner];
        partial[threadIdx.x] = sum;
        __syncthreads();
        for (int half = kThreads / 2; half > 0; half /= 2) {
            if (threadIdx.x < half)
                partial[threadIdx.x] += partial[threadIdx.x + half];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            out[o] = partial[0];
        __syncthreads();
    }
}

template <typename T>
__global__ void relu_kernel(int64_t count, const T *x, T *out)
{
    GRID_STRIDE(i, count) out[i] = x[i] > T(0) ? x[i] : T(0);
}

template <typename T>
__global__ void relu_backward_kernel(int64_t count, const T *x, const T *g, T *grad_x)
{
    GRID_STRIDE(i, count) grad_x[i] = x[i] > T(0) ? g[i] : T(0);
}

template <typename S, typename D>
__global__ void cast_kernel(int64_t count, const S *src, D *dst)
{
    GRID_STRIDE(i, count) dst[i] = (D)src[i];
}

/* First NaN wins, then the lowest index of the maximum (numpy's argmax). */
template <typename T>
__global__ void pool_forward_kernel(int64_t planes, int64_t plane_size, const T *x, T *values, int64_t *indices)
{
    GRID_STRIDE(p, planes)
    {
        const T *plane = x + p * plane_size;
        int64_t best = 0;
        T best_value = plane[0];
        if (best_value == best_value) {
            for (int64_t i = 1; i < plane_size; ++i) {
                const T v = plane[i];
                if (v != v) {
                    best = i;
                    best_value = v;
                    break;
                }
                if (v > best_value) {
                    best = i;
                    best_value = v;
                }
            }
        }
        values[p] = best_value;
        indices[p] = best;
    }
}

__global__ void count_bad_indices_kernel(int64_t planes, int64_t plane_size, const int64_t *indices,
                                         unsigned long long *bad)
{
    GRID_STRIDE(p, planes)
    {
        if (indices[p] < 0 || indices[p] >= plane_size)
            atomicAdd(bad, 1ULL);       /* an integer count: order does not matter */
    }
}

template <typename T>
__global__ void pool_scatter_kernel(int64_t planes, int64_t plane_size, const T *g, const int64_t *indices, T *grad_x)
{
    GRID_STRIDE(p, planes) grad_x[p * plane_size + indices[p]] = g[p];
}

struct StridedShape {
    int ndim;
    int64_t shape[8];
    int64_t strides[8];
};

template <typename T>
__global__ void strided_copy_kernel(int64_t count, StridedShape layout, const T *src, T *dst)
{
    GRID_STRIDE(i, count)
    {
        int64_t rest = i, offset = 0;
        for (int d = layout.ndim - 1; d >= 0; --d) {
            offset += (rest % layout.shape[d]) * layout.strides[d];
            rest /= layout.shape[d];
        }
        dst[i] = src[offset];
    }
}

template <typename T>
int launch_elementwise_check(const char *fn)
{
    CUDA_LAUNCHED(fn);
    return CEXTEND_OK;
}

}  // namespace

extern "C" {

const char *cextend_cuda_last_error(void)
{
    return cextend_last_error();
}

int cextend_cuda_device_count(int *count)
{
    static const char fn[] = "cextend_cuda_device_count";
    if (!count)
        return cx_illegal(fn, 1, "count", "is NULL");
    *count = 0;
    CUDA_CALL(fn, cudaGetDeviceCount(count));
    return CEXTEND_OK;
}

int cextend_cuda_malloc(void **ptr, int64_t bytes)
{
    static const char fn[] = "cextend_cuda_malloc";
    if (!ptr)
        return cx_illegal(fn, 1, "ptr", "is NULL");
    if (bytes < 0)
        return cx_illegal(fn, 2, "bytes", "must be >= 0, got %lld", (long long)bytes);
    *ptr = nullptr;
    cudaError_t error = cudaMalloc(ptr, (size_t)(bytes ? bytes : 1));
    if (error == cudaErrorMemoryAllocation) {
        cudaGetLastError();         /* clear the sticky-free error state */
        return cx_fail(CEXTEND_ERR_NOMEM, fn, "cannot allocate %lld bytes of device memory", (long long)bytes);
    }
    CUDA_CALL(fn, error);
    return CEXTEND_OK;
}

int cextend_cuda_free(void *ptr)
{
    CUDA_CALL("cextend_cuda_free", cudaFree(ptr));
    return CEXTEND_OK;
}

int cextend_cuda_memcpy(void *dst, const void *src, int64_t bytes, int kind)
{
    static const char fn[] = "cextend_cuda_memcpy";
    static const cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                           cudaMemcpyDeviceToDevice};
    if (bytes < 0)
        return cx_illegal(fn, 3, "bytes", "must be >= 0, got %lld", (long long)bytes);
    if (kind < 0 || kind > 2)
        return cx_illegal(fn, 4, "kind", "must be 0, 1 or 2, got %d", kind);
    if (bytes == 0)
        return CEXTEND_OK;
    if (!dst)
        return cx_illegal(fn, 1, "dst", "is NULL");
    if (!src)
        return cx_illegal(fn, 2, "src", "is NULL");
    CUDA_CALL(fn, cudaMemcpy(dst, src, (size_t)bytes, kinds[kind]));
    return CEXTEND_OK;
}

int cextend_cuda_synchronize(void)
{
    CUDA_CALL("cextend_cuda_synchronize", cudaDeviceSynchronize());
    return CEXTEND_OK;
}

#define CEXTEND_CUDA_TYPED(SFX, T)                                                                 \
    int cextend_cuda_linear_forward_##SFX(int64_t n, int64_t k, int64_t m, const T *x, int64_t ldx, \
                                          int transx, const T *w, int64_t ldw, int transw,         \
                                          const T *b, T *y, int64_t ldy)                           \
    {                                                                                              \
        return linear_forward<T>("cextend_cuda_linear_forward_" #SFX, n, k, m, x, ldx, transx, w,  \
                                 ldw, transw, b, y, ldy);                                          \
    }                                                                                              \
    int cextend_cuda_linear_backward_##SFX(int64_t n, int64_t k, int64_t m, const T *dy,           \
                                           int64_t lddy, int transdy, const T *x, int64_t ldx,     \
                                           int transx, const T *w, int64_t ldw, int transw, T *dx, \
                                           int64_t lddx, T *dw, int64_t lddw, T *db)               \
    {                                                                                              \
        return linear_backward<T>("cextend_cuda_linear_backward_" #SFX, n, k, m, dy, lddy,         \
                                  transdy, x, ldx, transx, w, ldw, transw, dx, lddx, dw, lddw, db); \
    }                                                                                              \
    int cextend_cuda_add_forward_##SFX(int64_t count, const T *a, const T *b, T *out)              \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_add_forward_" #SFX;                                 \
        int st = cx_validate_add_forward(fn, sizeof(T), count, a, b, out);                         \
        if (st || count == 0)                                                                      \
            return st;                                                                             \
        add_kernel<T><<<blocks_for(count), kThreads>>>(count, a, b, out);                          \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_add_backward_##SFX(int64_t count, const T *grad_out, T *grad_a, T *grad_b)    \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_add_backward_" #SFX;                                \
        int st = cx_validate_add_backward(fn, sizeof(T), count, grad_out, grad_a, grad_b);         \
        if (st || count == 0 || (!grad_a && !grad_b))                                              \
            return st;                                                                             \
        copy2_kernel<T><<<blocks_for(count), kThreads>>>(count, grad_out, grad_a, grad_b);         \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_mul_constant_forward_##SFX(int64_t count, const T *x, T c, T *out)            \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_mul_constant_forward_" #SFX;                        \
        int st = cx_validate_unary(fn, sizeof(T), count, x, "x", out, "out");                      \
        if (st || count == 0)                                                                      \
            return st;                                                                             \
        scale_kernel<T><<<blocks_for(count), kThreads>>>(count, x, c, out);                        \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_mul_constant_backward_##SFX(int64_t count, const T *grad_out, T c, T *grad_x) \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_mul_constant_backward_" #SFX;                       \
        int st = cx_validate_unary(fn, sizeof(T), count, grad_out, "grad_out", grad_x, "grad_x");  \
        if (st || count == 0)                                                                      \
            return st;                                                                             \
        scale_kernel<T><<<blocks_for(count), kThreads>>>(count, grad_out, c, grad_x);              \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_global_max_pool_forward_##SFX(int64_t planes, int64_t plane_size, const T *x, \
                                                   T *values, int64_t *indices)                    \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_global_max_pool_forward_" #SFX;                     \
        int st = cx_validate_pool_forward(fn, sizeof(T), planes, plane_size, x, values, indices);  \
        if (st || planes == 0)                                                                     \
            return st;                                                                             \
        pool_forward_kernel<T><<<blocks_for(planes), kThreads>>>(planes, plane_size, x, values,    \
                                                                 indices);                         \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_global_max_pool_backward_##SFX(int64_t planes, int64_t plane_size,            \
                                                    const T *grad_values, const int64_t *indices,  \
                                                    T *grad_x)                                     \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_global_max_pool_backward_" #SFX;                    \
        int st = cx_validate_pool_backward(fn, sizeof(T), planes, plane_size, grad_values, indices, \
                                           grad_x);                                                \
        if (st || planes == 0)                                                                     \
            return st;                                                                             \
        /* Count bad indices on the device before grad_x is touched. */                            \
        unsigned long long *bad = nullptr, host_bad = 0;                                           \
        CUDA_CALL(fn, cudaMalloc((void **)&bad, sizeof *bad));                                     \
        cudaError_t error = cudaMemset(bad, 0, sizeof *bad);                                       \
        if (error == cudaSuccess) {                                                                \
            count_bad_indices_kernel<<<blocks_for(planes), kThreads>>>(planes, plane_size, indices, \
                                                                        bad);                      \
            error = cudaGetLastError();                                                            \
        }                                                                                          \
        if (error == cudaSuccess)                                                                  \
            error = cudaMemcpy(&host_bad, bad, sizeof *bad, cudaMemcpyDeviceToHost);               \
        cudaFree(bad);                                                                             \
        if (error != cudaSuccess)                                                                  \
            return cuda_failed(fn, error);                                                         \
        if (host_bad)                                                                              \
            return cx_illegal(fn, 4, "indices", "%llu of them are outside [0, %lld)", host_bad,    \
                              (long long)plane_size);                                              \
        CUDA_CALL(fn, cudaMemset(grad_x, 0, (size_t)(planes * plane_size) * sizeof(T)));           \
        pool_scatter_kernel<T><<<blocks_for(planes), kThreads>>>(planes, plane_size, grad_values,  \
                                                                 indices, grad_x);                 \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_fill_##SFX(int64_t count, T value, T *out)                                    \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_fill_" #SFX;                                        \
        int st = cx_validate_unary(fn, sizeof(T), count, out, "out", out, "out");                  \
        if (st || count == 0)                                                                      \
            return st;                                                                             \
        fill_kernel<T><<<blocks_for(count), kThreads>>>(count, value, out);                        \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_axpy_##SFX(int64_t count, T alpha, const T *x, T *y)                          \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_axpy_" #SFX;                                        \
        int st = cx_validate_unary(fn, sizeof(T), count, x, "x", y, "y");                          \
        if (st || count == 0)                                                                      \
            return st;                                                                             \
        axpy_kernel<T><<<blocks_for(count), kThreads>>>(count, alpha, x, y);                       \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_binary_##SFX(int op, int64_t count, const T *a, const T *b, T s, int reversed, \
                                  T *out)                                                          \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_binary_" #SFX;                                      \
        if (op < 0 || op > 2)                                                                      \
            return cx_illegal(fn, 1, "op", "must be 0 (add), 1 (subtract) or 2 (multiply), got %d", op); \
        int st = cx_validate_unary(fn, sizeof(T), count, a, "a", out, "out");                      \
        if (st || count == 0)                                                                      \
            return st;                                                                             \
        binary_kernel<T><<<blocks_for(count), kThreads>>>(op, count, a, b, s, reversed, out);      \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_sum_##SFX(int64_t outer, int64_t reduce, int64_t inner, const T *x, T *out)   \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_sum_" #SFX;                                         \
        int st;                                                                                    \
        if ((st = cx_check_size(fn, 1, "outer", outer)) || (st = cx_check_size(fn, 2, "reduce", reduce)) || \
            (st = cx_check_size(fn, 3, "inner", inner)))                                           \
            return st;                                                                             \
        if (outer * inner == 0)                                                                    \
            return CEXTEND_OK;                                                                     \
        if ((reduce > 0 && !x) || !out)                                                            \
            return cx_illegal(fn, x ? 5 : 4, x ? "out" : "x", "is NULL");                          \
        sum_kernel<T><<<blocks_for(outer * inner * kThreads), kThreads>>>(outer, reduce, inner, x, out); \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_relu_##SFX(int64_t count, const T *x, T *out)                                 \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_relu_" #SFX;                                        \
        int st = cx_validate_unary(fn, sizeof(T), count, x, "x", out, "out");                      \
        if (st || count == 0)                                                                      \
            return st;                                                                             \
        relu_kernel<T><<<blocks_for(count), kThreads>>>(count, x, out);                            \
        return launch_elementwise_check<T>(fn);                                                    \
    }                                                                                              \
    int cextend_cuda_relu_backward_##SFX(int64_t count, const T *x, const T *grad_out, T *grad_x)  \
    {                                                                                              \
        static const char fn[] = "cextend_cuda_relu_backward_" #SFX;                               \
        int st = cx_validate_unary(fn, sizeof(T), count, x, "x", grad_x, "grad_x");                \
        if (st || count == 0)                                                                      \
            return st;                                                                             \
        if (!grad_out)                                                                             \
            return cx_illegal(fn, 3, "grad_out", "is NULL");                                       \
        relu_backward_kernel<T><<<blocks_for(count), kThreads>>>(count, x, grad_out, grad_x);      \
        return launch_elementwise_check<T>(fn);                                                    \
    }

CEXTEND_CUDA_TYPED(f32, float)
CEXTEND_CUDA_TYPED(f64, double)

int cextend_cuda_cast_f32_f64(int64_t count, const float *src, double *dst)
{
    static const char fn[] = "cextend_cuda_cast_f32_f64";
    int st = cx_validate_unary(fn, sizeof(double), count, src, "src", dst, "dst");
    if (st || count == 0)
        return st;
    cast_kernel<float, double><<<blocks_for(count), kThreads>>>(count, src, dst);
    CUDA_LAUNCHED(fn);
    return CEXTEND_OK;
}

int cextend_cuda_cast_f64_f32(int64_t count, const double *src, float *dst)
{
    static const char fn[] = "cextend_cuda_cast_f64_f32";
    int st = cx_validate_unary(fn, sizeof(double), count, src, "src", dst, "dst");
    if (st || count == 0)
        return st;
    cast_kernel<double, float><<<blocks_for(count), kThreads>>>(count, src, dst);
    CUDA_LAUNCHED(fn);
    return CEXTEND_OK;
}

int cextend_cuda_strided_copy(int ndim, const int64_t *shape, const int64_t *strides, int64_t elem_size,
                              const void *src, void *dst)
{
    static const char fn[] = "cextend_cuda_strided_copy";
    if (ndim < 0 || ndim > 8)
        return cx_illegal(fn, 1, "ndim", "must be in 0..8, got %d", ndim);
    if (ndim > 0 && (!shape || !strides))
        return cx_illegal(fn, shape ? 3 : 2, shape ? "strides" : "shape", "is NULL");
    StridedShape layout;
    layout.ndim = ndim;
    int64_t count = 1;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 0)
            return cx_illegal(fn, 2, "shape", "shape[%d] = %lld is negative", d, (long long)shape[d]);
        if (strides[d] < 0)
            return cx_illegal(fn, 3, "strides", "strides[%d] = %lld is negative", d, (long long)strides[d]);
        layout.shape[d] = shape[d];
        layout.strides[d] = strides[d];
        count *= shape[d];
    }
    if (count == 0)
        return CEXTEND_OK;
    if (!src || !dst)
        return cx_illegal(fn, src ? 6 : 5, src ? "dst" : "src", "is NULL");
    switch (elem_size) {
    case 4:
        strided_copy_kernel<float><<<blocks_for(count), kThreads>>>(count, layout, (const float *)src, (float *)dst);
        break;
    case 8:
        strided_copy_kernel<double><<<blocks_for(count), kThreads>>>(count, layout, (const double *)src, (double *)dst);
        break;
    case 1:
        strided_copy_kernel<unsigned char><<<blocks_for(count), kThreads>>>(
            count, layout, (const unsigned char *)src, (unsigned char *)dst);
        break;
    default:
        return cx_illegal(fn, 4, "elem_size", "must be 1, 4 or 8, got %lld", (long long)elem_size);
    }
    CUDA_LAUNCHED(fn);
    return CEXTEND_OK;
}

}  // extern "C"
