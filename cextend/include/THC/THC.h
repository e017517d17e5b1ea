/*
 * THC/THC.h -- the CUDA half of the TH shim (see TH/TH.h), for extension-ffi
 * era sources built with create_extension(..., with_cuda=True), which
 * defines WITH_CUDA and puts the CUDA toolkit's headers on the path.
 *
 * THCudaTensor and THCudaStorage describe float32 data in device memory,
 * with the fields of TH's tensors and storages; the functions take the
 * THCState the era's code declares with `extern THCState *state;` (defined
 * by the extension module cextend generates).  Storage grown by a resize
 * comes from cudaMalloc and, like TH's, is owned by its storage and freed
 * (cudaFree) with its last reference.  Failures are reported as TH's are
 * (THError: the wrapper raises RuntimeError), never by aborting.
 */
#ifndef CEXTEND_THC_H
#define CEXTEND_THC_H

#include <TH/TH.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct THCState {
    int device;                 /* the CUDA device the extension runs on */
} THCState;

TH_DEFINE_TENSOR_TYPE(THCudaTensor, THCudaStorage, float)

static inline THCudaStorage *THCudaTensor_storage(THCState *state, const THCudaTensor *t)
{
    (void)state;
    return t->storage;
}
static inline ptrdiff_t THCudaTensor_storageOffset(THCState *state, const THCudaTensor *t)
{
    (void)state;
    return t->storageOffset;
}
static inline float *THCudaTensor_data(THCState *state, const THCudaTensor *t)
{
    (void)state;
    return t->storage && t->storage->data ? t->storage->data + t->storageOffset : NULL;
}
static inline int THCudaTensor_nDimension(THCState *state, const THCudaTensor *t)
{
    (void)state;
    return t->nDimension;
}
static inline int64_t THCudaTensor_size(THCState *state, const THCudaTensor *t, int dim)
{
    (void)state;
    if (dim < 0 || dim >= t->nDimension) {
        cextend_th_arg_error(2, "dimension %d out of range of %dD tensor", dim, t->nDimension);
        return 0;
    }
    return t->size[dim];
}
static inline int64_t THCudaTensor_stride(THCState *state, const THCudaTensor *t, int dim)
{
    (void)state;
    if (dim < 0 || dim >= t->nDimension) {
        cextend_th_arg_error(2, "dimension %d out of range of %dD tensor", dim, t->nDimension);
        return 0;
    }
    return t->stride[dim];
}
static inline ptrdiff_t THCudaTensor_nElement(THCState *state, const THCudaTensor *t)
{
    (void)state;
    if (t->nDimension == 0)
        return 0;
    ptrdiff_t n = 1;
    for (int d = 0; d < t->nDimension; ++d)
        n *= (ptrdiff_t)t->size[d];
    return n;
}
static inline int THCudaTensor_isContiguous(THCState *state, const THCudaTensor *t)
{
    (void)state;
    int64_t expected = 1;
    for (int d = t->nDimension - 1; d >= 0; --d) {
        if (t->size[d] == 1)
            continue;
        if (t->stride[d] != expected)
            return 0;
        expected *= t->size[d];
    }
    return 1;
}
static inline int THCudaTensor_isSameSizeAs(THCState *state, const THCudaTensor *a, const THCudaTensor *b)
{
    (void)state;
    if (a->nDimension != b->nDimension)
        return 0;
    for (int d = 0; d < a->nDimension; ++d)
        if (a->size[d] != b->size[d])
            return 0;
    return 1;
}
static inline THCudaTensor *THCudaTensor_new(THCState *state)
{
    (void)state;
    THCudaTensor *t = (THCudaTensor *)calloc(1, sizeof(THCudaTensor));
    if (!t) {
        THError("THC: out of memory (a tensor)");
        return NULL;
    }
    t->refcount = 1;
    t->flags = TH_HEAP;
    cextend_th_track(1);
    return t;
}
static inline void THCudaTensor_retain(THCState *state, THCudaTensor *t)
{
    (void)state;
    if (t)
        ++t->refcount;
}
static inline void THCudaStorage_free(THCState *state, THCudaStorage *s)
{
    (void)state;
    if (!s || --s->refcount > 0)
        return;
    if (s->flags & TH_STORAGE_OWNS_DATA)
        cudaFree(s->data);
    if (s->flags & TH_HEAP) {
        free(s);
        cextend_th_track(-1);
    }
}
static inline void THCudaTensor_free(THCState *state, THCudaTensor *t)
{
    if (!t || --t->refcount > 0)
        return;
    THCudaStorage_free(state, t->storage);
    if (t->flags & TH_HEAP) {
        free(t);
        cextend_th_track(-1);
    }
}
/* TH's resizeNd on the device: kept as it is when the sizes (and given
 * strides) already match, else contiguous (or the given strides) in a
 * storage grown with cudaMalloc when too small. */
static inline void THCudaTensor_resizeNd(THCState *state, THCudaTensor *t, int nDimension,
                                         const int64_t *size, const int64_t *stride)
{
    (void)state;
    if (nDimension < 0 || nDimension > TH_MAX_DIMS) {
        cextend_th_arg_error(3, "a TH tensor has 0 to %d dimensions, got %d", TH_MAX_DIMS, nDimension);
        return;
    }
    int dims = 0, same = 1;
    for (int d = 0; d < nDimension && size[d] > 0; ++d) {
        ++dims;
        if (t->nDimension > d && size[d] != t->size[d])
            same = 0;
        if (t->nDimension > d && stride && stride[d] >= 0 && stride[d] != t->stride[d])
            same = 0;
    }
    if (same && dims == t->nDimension)
        return;
    int64_t new_stride[TH_MAX_DIMS], span = 1;
    for (int d = dims - 1; d >= 0; --d) {
        if (stride && stride[d] >= 0)
            new_stride[d] = stride[d];
        else if (d == dims - 1)
            new_stride[d] = 1;
        else if (__builtin_mul_overflow(size[d + 1], new_stride[d + 1], &new_stride[d])) {
            cextend_th_arg_error(4, "the tensor's size overflows");
            return;
        }
    }
    for (int d = 0; d < dims; ++d) {
        int64_t reach;
        if (__builtin_mul_overflow(size[d] - 1, new_stride[d], &reach) ||
            __builtin_add_overflow(span, reach, &span)) {
            cextend_th_arg_error(4, "the tensor's size overflows");
            return;
        }
    }
    if (dims > 0) {
        const int64_t needed = span + (int64_t)t->storageOffset;
        if (!t->storage) {
            t->storage = (THCudaStorage *)calloc(1, sizeof(THCudaStorage));
            if (!t->storage) {
                THError("THC: out of memory (a storage)");
                return;
            }
            t->storage->refcount = 1;
            t->storage->flags = TH_HEAP;
            cextend_th_track(1);
        }
        THCudaStorage *s = t->storage;
        if (needed > s->size) {
            void *grown = NULL;
            cudaError_t status = cudaMalloc(&grown, (size_t)needed * sizeof(float));
            if (status != cudaSuccess) {
                THError("THC: cudaMalloc of %lld floats failed (error %d)", (long long)needed, (int)status);
                return;
            }
            if (s->data && s->size > 0)
                cudaMemcpy(grown, s->data, (size_t)s->size * sizeof(float), cudaMemcpyDeviceToDevice);
            if (s->flags & TH_STORAGE_OWNS_DATA)
                cudaFree(s->data);
            s->data = (float *)grown;
            s->size = needed;
            s->flags |= TH_STORAGE_OWNS_DATA;
        }
    }
    for (int d = 0; d < dims; ++d) {
        t->size[d] = size[d];
        t->stride[d] = new_stride[d];
    }
    t->nDimension = dims;
}
static inline void THCudaTensor_resize1d(THCState *state, THCudaTensor *t, int64_t s0)
{
    int64_t s[1] = {s0};
    THCudaTensor_resizeNd(state, t, 1, s, NULL);
}
static inline void THCudaTensor_resize2d(THCState *state, THCudaTensor *t, int64_t s0, int64_t s1)
{
    int64_t s[2] = {s0, s1};
    THCudaTensor_resizeNd(state, t, 2, s, NULL);
}
static inline void THCudaTensor_resize3d(THCState *state, THCudaTensor *t, int64_t s0, int64_t s1, int64_t s2)
{
    int64_t s[3] = {s0, s1, s2};
    THCudaTensor_resizeNd(state, t, 3, s, NULL);
}
static inline void THCudaTensor_resize4d(THCState *state, THCudaTensor *t, int64_t s0, int64_t s1,
                                         int64_t s2, int64_t s3)
{
    int64_t s[4] = {s0, s1, s2, s3};
    THCudaTensor_resizeNd(state, t, 4, s, NULL);
}
static inline void THCudaTensor_resizeAs(THCState *state, THCudaTensor *t, THCudaTensor *src)
{
    if (!THCudaTensor_isSameSizeAs(state, t, src))
        THCudaTensor_resizeNd(state, t, src->nDimension, src->size, NULL);
}
/* Contiguous tensors only, as the element loops run on the device in the
 * user's own kernels; these helpers cover TH's common whole-tensor calls. */
static inline void THCudaTensor_zero(THCState *state, THCudaTensor *t)
{
    if (!THCudaTensor_isContiguous(state, t)) {
        THError("THCudaTensor_zero: the shim handles contiguous tensors only");
        return;
    }
    if (t->storage && THCudaTensor_nElement(state, t) > 0)
        cudaMemset(THCudaTensor_data(state, t), 0, (size_t)THCudaTensor_nElement(state, t) * sizeof(float));
}
static inline void THCudaTensor_copy(THCState *state, THCudaTensor *t, THCudaTensor *src)
{
    ptrdiff_t n = THCudaTensor_nElement(state, t);
    if (n != THCudaTensor_nElement(state, src)) {
        THError("inconsistent tensor size: %td and %td elements", n, THCudaTensor_nElement(state, src));
        return;
    }
    if (!THCudaTensor_isContiguous(state, t) || !THCudaTensor_isContiguous(state, src)) {
        THError("THCudaTensor_copy: the shim handles contiguous tensors only");
        return;
    }
    if (n > 0)
        cudaMemcpy(THCudaTensor_data(state, t), THCudaTensor_data(state, src), (size_t)n * sizeof(float),
                   cudaMemcpyDeviceToDevice);
}

#ifdef __cplusplus
}
#endif

#endif /* CEXTEND_THC_H */
