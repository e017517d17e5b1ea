/*
 * TH/TH.h -- a shim of the TH C tensor API that torch.utils.ffi extensions
 * were written against, so their sources compile unchanged with cextend's
 * create_extension (which puts this directory on the include path).
 *
 * THFloatTensor, THDoubleTensor and THLongTensor describe strided data
 * (up to TH_MAX_DIMS dimensions).  Tensors passed from Python view the
 * cextend Tensor's storage (owned by Python: `owned` is 0).  When C code
 * needs more room (a resize), it mallocs new storage, marks it owned, and
 * after the call Python adopts that storage as the Tensor's and frees it
 * exactly once, when the last array using it goes.  Tensors created in C
 * with _new() must be released with _free().
 *
 * Header-only (static inline): an extension needs nothing extra to link.
 * Allocation failures are fatal in TH; here they leave the tensor empty
 * (nElement 0) rather than abort, and _data() returns NULL.
 */
#ifndef CEXTEND_TH_H
#define CEXTEND_TH_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TH_MAX_DIMS 8

#define TH_DEFINE_TENSOR_TYPE(Name, real)                                                         \
    typedef struct Name {                                                                         \
        real *storage;            /* first element of the storage block */                        \
        int64_t storage_offset;   /* in elements */                                               \
        int64_t capacity;         /* elements in the storage block */                             \
        int nDimension;                                                                           \
        int owned;                /* 1: storage was malloc'ed here and is ours to free */         \
        int64_t size[TH_MAX_DIMS];                                                                \
        int64_t stride[TH_MAX_DIMS];                                                              \
    } Name;

TH_DEFINE_TENSOR_TYPE(THFloatTensor, float)
TH_DEFINE_TENSOR_TYPE(THDoubleTensor, double)
TH_DEFINE_TENSOR_TYPE(THLongTensor, int64_t)

#define TH_DEFINE_TENSOR_API(Name, real)                                                          \
    static inline real *Name##_data(const Name *t)                                                \
    {                                                                                             \
        return t->storage ? t->storage + t->storage_offset : NULL;                                \
    }                                                                                             \
    static inline int Name##_nDimension(const Name *t) { return t->nDimension; }                  \
    static inline int64_t Name##_size(const Name *t, int dim)                                     \
    {                                                                                             \
        return dim >= 0 && dim < t->nDimension ? t->size[dim] : 0;                                \
    }                                                                                             \
    static inline int64_t Name##_stride(const Name *t, int dim)                                   \
    {                                                                                             \
        return dim >= 0 && dim < t->nDimension ? t->stride[dim] : 0;                              \
    }                                                                                             \
    static inline ptrdiff_t Name##_nElement(const Name *t)                                        \
    {                                                                                             \
        if (t->nDimension == 0)                                                                   \
            return 0; /* TH: a tensor with no dimensions is empty */                              \
        ptrdiff_t n = 1;                                                                          \
        for (int d = 0; d < t->nDimension; ++d)                                                   \
            n *= t->size[d];                                                                      \
        return n;                                                                                 \
    }                                                                                             \
    static inline int Name##_isContiguous(const Name *t)                                          \
    {                                                                                             \
        int64_t expected = 1;                                                                     \
        for (int d = t->nDimension - 1; d >= 0; --d) {                                            \
            if (t->size[d] != 1 && t->stride[d] != expected)                                      \
                return 0;                                                                         \
            expected *= t->size[d];                                                               \
        }                                                                                         \
        return 1;                                                                                 \
    }                                                                                             \
    static inline int Name##_isSameSizeAs(const Name *a, const Name *b)                           \
    {                                                                                             \
        if (a->nDimension != b->nDimension)                                                       \
            return 0;                                                                             \
        for (int d = 0; d < a->nDimension; ++d)                                                   \
            if (a->size[d] != b->size[d])                                                         \
                return 0;                                                                         \
        return 1;                                                                                 \
    }                                                                                             \
    /* Contiguous sizes; storage grows (C-owned) when it is too small. */                         \
    static inline void Name##_resizeNd(Name *t, int nDimension, const int64_t *size)              \
    {                                                                                             \
        if (nDimension < 0 || nDimension > TH_MAX_DIMS)                                           \
            return;                                                                               \
        int64_t total = 1;                                                                        \
        for (int d = nDimension - 1; d >= 0; --d) {                                               \
            t->size[d] = size[d] < 0 ? 0 : size[d];                                               \
            t->stride[d] = total;                                                                 \
            total *= t->size[d];                                                                  \
        }                                                                                         \
        t->nDimension = nDimension;                                                               \
        if (total > t->capacity - t->storage_offset) {                                            \
            real *grown = (real *)malloc((size_t)(total ? total : 1) * sizeof(real));             \
            if (!grown) {                                                                         \
                t->nDimension = 0;                                                                \
                return;                                                                           \
            }                                                                                     \
            if (t->storage && t->capacity > t->storage_offset) {                                  \
                int64_t keep = t->capacity - t->storage_offset;                                   \
                memcpy(grown, t->storage + t->storage_offset,                                     \
                       (size_t)(keep < total ? keep : total) * sizeof(real));                     \
            }                                                                                     \
            if (t->owned)                                                                         \
                free(t->storage);                                                                 \
            t->storage = grown;                                                                   \
            t->storage_offset = 0;                                                                \
            t->capacity = total;                                                                  \
            t->owned = 1;                                                                         \
        }                                                                                         \
    }                                                                                             \
    static inline void Name##_resize1d(Name *t, int64_t s0)                                       \
    {                                                                                             \
        int64_t s[1] = {s0};                                                                      \
        Name##_resizeNd(t, 1, s);                                                                 \
    }                                                                                             \
    static inline void Name##_resize2d(Name *t, int64_t s0, int64_t s1)                           \
    {                                                                                             \
        int64_t s[2] = {s0, s1};                                                                  \
        Name##_resizeNd(t, 2, s);                                                                 \
    }                                                                                             \
    static inline void Name##_resize3d(Name *t, int64_t s0, int64_t s1, int64_t s2)               \
    {                                                                                             \
        int64_t s[3] = {s0, s1, s2};                                                              \
        Name##_resizeNd(t, 3, s);                                                                 \
    }                                                                                             \
    static inline void Name##_resize4d(Name *t, int64_t s0, int64_t s1, int64_t s2, int64_t s3)   \
    {                                                                                             \
        int64_t s[4] = {s0, s1, s2, s3};                                                          \
        Name##_resizeNd(t, 4, s);                                                                 \
    }                                                                                             \
    static inline void Name##_resizeAs(Name *t, const Name *src)                                  \
    {                                                                                             \
        Name##_resizeNd(t, src->nDimension, src->size);                                           \
    }                                                                                             \
    /* Visit every element of t (any strides) in row-major order. */                              \
    static inline int64_t Name##_offsetOf(const Name *t, int64_t flat)                            \
    {                                                                                             \
        int64_t offset = 0;                                                                       \
        for (int d = t->nDimension - 1; d >= 0; --d) {                                            \
            int64_t extent = t->size[d] ? t->size[d] : 1;                                         \
            offset += (flat % extent) * t->stride[d];                                             \
            flat /= extent;                                                                       \
        }                                                                                         \
        return offset;                                                                            \
    }                                                                                             \
    static inline void Name##_fill(Name *t, real value)                                           \
    {                                                                                             \
        real *data = Name##_data(t);                                                              \
        ptrdiff_t n = Name##_nElement(t);                                                         \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            data[Name##_offsetOf(t, i)] = value;                                                  \
    }                                                                                             \
    static inline void Name##_zero(Name *t) { Name##_fill(t, (real)0); }                          \
    /* r = t + value * src, elementwise; r is resized like t first. */                            \
    static inline void Name##_cadd(Name *r, Name *t, real value, Name *src)                       \
    {                                                                                             \
        if (r != t)                                                                               \
            Name##_resizeAs(r, t);                                                                \
        ptrdiff_t n = Name##_nElement(t);                                                         \
        if (Name##_nElement(src) != n || Name##_nElement(r) != n)                                 \
            return;                                                                               \
        real *rd = Name##_data(r), *td = Name##_data(t), *sd = Name##_data(src);                  \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            rd[Name##_offsetOf(r, i)] = td[Name##_offsetOf(t, i)] + value * sd[Name##_offsetOf(src, i)]; \
    }                                                                                             \
    /* Copy src's elements into t (same number of elements, any shapes). */                       \
    static inline void Name##_copy(Name *t, Name *src)                                            \
    {                                                                                             \
        ptrdiff_t n = Name##_nElement(t);                                                         \
        if (Name##_nElement(src) != n)                                                            \
            return;                                                                               \
        real *td = Name##_data(t), *sd = Name##_data(src);                                        \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            td[Name##_offsetOf(t, i)] = sd[Name##_offsetOf(src, i)];                              \
    }                                                                                             \
    static inline Name *Name##_new(void)                                                          \
    {                                                                                             \
        return (Name *)calloc(1, sizeof(Name));                                                   \
    }                                                                                             \
    static inline void Name##_free(Name *t)                                                       \
    {                                                                                             \
        if (!t)                                                                                   \
            return;                                                                               \
        if (t->owned)                                                                             \
            free(t->storage);                                                                     \
        free(t);                                                                                  \
    }

TH_DEFINE_TENSOR_API(THFloatTensor, float)
TH_DEFINE_TENSOR_API(THDoubleTensor, double)
TH_DEFINE_TENSOR_API(THLongTensor, int64_t)

#endif /* CEXTEND_TH_H */
