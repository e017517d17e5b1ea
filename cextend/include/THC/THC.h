/*
 * THC/THC.h -- the CUDA half of the TH shim (see TH/TH.h), for extension-ffi
 * era sources built with create_extension(..., with_cuda=True), which
 * defines WITH_CUDA and puts the CUDA toolkit's headers on the path.
 *
 * THCudaTensor describes float32 data in device memory, with the same
 * fields as THFloatTensor; its functions take the THCState the era's code
 * declares with `extern THCState *state;` (defined by the extension module
 * cextend generates).  Storage grown by a resize comes from cudaMalloc and,
 * like TH's, is marked owned so its owner frees it exactly once.
 */
#ifndef CEXTEND_THC_H
#define CEXTEND_THC_H

#include <TH/TH.h>
#include <cuda_runtime_api.h>

typedef struct THCState {
    int device;                 /* the CUDA device the extension runs on */
} THCState;

TH_DEFINE_TENSOR_TYPE(THCudaTensor, float)

static inline float *THCudaTensor_data(THCState *state, const THCudaTensor *t)
{
    (void)state;
    return t->storage ? t->storage + t->storage_offset : NULL;
}
static inline int THCudaTensor_nDimension(THCState *state, const THCudaTensor *t)
{
    (void)state;
    return t->nDimension;
}
static inline int64_t THCudaTensor_size(THCState *state, const THCudaTensor *t, int dim)
{
    (void)state;
    return dim >= 0 && dim < t->nDimension ? t->size[dim] : 0;
}
static inline int64_t THCudaTensor_stride(THCState *state, const THCudaTensor *t, int dim)
{
    (void)state;
    return dim >= 0 && dim < t->nDimension ? t->stride[dim] : 0;
}
static inline ptrdiff_t THCudaTensor_nElement(THCState *state, const THCudaTensor *t)
{
    (void)state;
    if (t->nDimension == 0)
        return 0;
    ptrdiff_t n = 1;
    for (int d = 0; d < t->nDimension; ++d)
        n *= t->size[d];
    return n;
}
static inline int THCudaTensor_isContiguous(THCState *state, const THCudaTensor *t)
{
    (void)state;
    int64_t expected = 1;
    for (int d = t->nDimension - 1; d >= 0; --d) {
        if (t->size[d] != 1 && t->stride[d] != expected)
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
/* Contiguous sizes; storage grows (cudaMalloc, owned) when too small.  On a
 * CUDA error the tensor is left empty, as TH.h does on allocation failure. */
static inline void THCudaTensor_resizeNd(THCState *state, THCudaTensor *t, int nDimension,
                                         const int64_t *size)
{
    (void)state;
    if (nDimension < 0 || nDimension > TH_MAX_DIMS)
        return;
    int64_t total = 1;
    for (int d = nDimension - 1; d >= 0; --d) {
        t->size[d] = size[d] < 0 ? 0 : size[d];
        t->stride[d] = total;
        total *= t->size[d];
    }
    t->nDimension = nDimension;
    if (total > t->capacity - t->storage_offset) {
        void *grown = NULL;
        if (cudaMalloc(&grown, (size_t)(total ? total : 1) * sizeof(float)) != cudaSuccess) {
            t->nDimension = 0;
            return;
        }
        if (t->storage && t->capacity > t->storage_offset) {
            int64_t keep = t->capacity - t->storage_offset;
            cudaMemcpy(grown, t->storage + t->storage_offset,
                       (size_t)(keep < total ? keep : total) * sizeof(float), cudaMemcpyDeviceToDevice);
        }
        if (t->owned)
            cudaFree(t->storage);
        t->storage = (float *)grown;
        t->storage_offset = 0;
        t->capacity = total;
        t->owned = 1;
    }
}
static inline void THCudaTensor_resize1d(THCState *state, THCudaTensor *t, int64_t s0)
{
    int64_t s[1] = {s0};
    THCudaTensor_resizeNd(state, t, 1, s);
}
static inline void THCudaTensor_resize2d(THCState *state, THCudaTensor *t, int64_t s0, int64_t s1)
{
    int64_t s[2] = {s0, s1};
    THCudaTensor_resizeNd(state, t, 2, s);
}
static inline void THCudaTensor_resize3d(THCState *state, THCudaTensor *t, int64_t s0, int64_t s1, int64_t s2)
{
    int64_t s[3] = {s0, s1, s2};
    THCudaTensor_resizeNd(state, t, 3, s);
}
static inline void THCudaTensor_resize4d(THCState *state, THCudaTensor *t, int64_t s0, int64_t s1,
                                         int64_t s2, int64_t s3)
{
    int64_t s[4] = {s0, s1, s2, s3};
    THCudaTensor_resizeNd(state, t, 4, s);
}
static inline void THCudaTensor_resizeAs(THCState *state, THCudaTensor *t, const THCudaTensor *src)
{
    THCudaTensor_resizeNd(state, t, src->nDimension, src->size);
}
/* Contiguous tensors only, as the element loops run on the device in the
 * user's own kernels; these helpers cover TH's common whole-tensor calls. */
static inline void THCudaTensor_zero(THCState *state, THCudaTensor *t)
{
    if (THCudaTensor_isContiguous(state, t) && t->storage)
        cudaMemset(THCudaTensor_data(state, t), 0, (size_t)THCudaTensor_nElement(state, t) * sizeof(float));
}
static inline void THCudaTensor_copy(THCState *state, THCudaTensor *t, THCudaTensor *src)
{
    ptrdiff_t n = THCudaTensor_nElement(state, t);
    if (n == THCudaTensor_nElement(state, src) && THCudaTensor_isContiguous(state, t) &&
        THCudaTensor_isContiguous(state, src) && n > 0)
        cudaMemcpy(THCudaTensor_data(state, t), THCudaTensor_data(state, src), (size_t)n * sizeof(float),
                   cudaMemcpyDeviceToDevice);
}
static inline THCudaTensor *THCudaTensor_new(THCState *state)
{
    (void)state;
    return (THCudaTensor *)calloc(1, sizeof(THCudaTensor));
}
static inline void THCudaTensor_free(THCState *state, THCudaTensor *t)
{
    (void)state;
    if (!t)
        return;
    if (t->owned)
        cudaFree(t->storage);
    free(t);
}

#endif /* CEXTEND_THC_H */
