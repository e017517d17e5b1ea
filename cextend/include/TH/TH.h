/*
 * TH/TH.h -- a shim of the TH C tensor API that torch.utils.ffi extensions
 * were written against (torch 0.3/0.4), so their sources compile unchanged
 * with cextend's create_extension, which puts this directory on the
 * include path and defines the few symbols declared `extern` below.
 *
 * Types: TH{Float,Double,Long,Int,Byte}Tensor and their TH*Storage, for
 * float, double, int64_t, int32_t and uint8_t data.  A tensor is TH's: a
 * refcounted view (sizes, strides, storageOffset) of a refcounted storage.
 * Tensors passed from Python view the cextend Tensor's memory (the storage
 * does not own it); storage that C allocates (new*, or a resize that needs
 * more room) is owned and freed with its last reference, or adopted by the
 * Tensor it was returned in.  Tensors created in C are released with _free.
 *
 * Errors: as TH's error handler did, THError/THArgCheck never return into
 * the extension's code: they record TH's message and longjmp to the
 * generated wrapper around the C function that Python called, which
 * returns at once; the Python side frees the structs it made for the call
 * and raises RuntimeError with that message.  (Called outside such a call,
 * from a thread of the extension's own, THError records the message and
 * returns.)  An allocation failure is such an error, never an abort.
 *
 * Semantics follow TH: resize* keeps a tensor that already has the right
 * size as it is (strides included), else makes it contiguous, growing the
 * storage only when it is too small; sizes of 0 end a tensor's dimensions
 * (a tensor with no dimensions is empty).  Element loops follow each
 * tensor's strides, so every function accepts non-contiguous tensors.
 */
#ifndef CEXTEND_TH_H
#define CEXTEND_TH_H

/* What TH's THGeneral.h brought in: extensions call floor(), use INT_MAX,
 * FLT_EPSILON, M_PI or THInf without including anything themselves. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846     /* math.h leaves it out under -std=c11 */
#endif
#define THInf DBL_MAX                   /* TH's "infinity" for min/max searches */
#define THMin(X, Y) ((X) < (Y) ? (X) : (Y))
#define THMax(X, Y) ((X) > (Y) ? (X) : (Y))

#define TH_MAX_DIMS 8
#define TH_INDEX_BASE 0
#define TH_STORAGE_OWNS_DATA 1      /* data was malloc'ed here: freed with the storage */
#define TH_HEAP 2                   /* the struct was malloc'ed here: freed with its last reference */
#define CEXTEND_TH_ERROR_SIZE 512

#ifdef __cplusplus
extern "C" {
#endif

/* Defined once, by the module create_extension generates. */
char *cextend_th_error_buffer(void);   /* this thread's pending message ("" if none) */
void cextend_th_unwind(void);          /* longjmp to the wrapper of the running call, if any */
void cextend_th_track(int delta);      /* counts live shim allocations (a leak check) */
int cextend_th_live_objects(void);     /* that count: TH structs not yet freed */

static inline void THError(const char *fmt, ...)
{
    char *message = cextend_th_error_buffer();
    if (!message[0]) {                      /* the first error is the one raised */
        va_list args;
        va_start(args, fmt);
        vsnprintf(message, CEXTEND_TH_ERROR_SIZE, fmt, args);
        va_end(args);
        if (!message[0])
            strcpy(message, "TH error");
    }
    cextend_th_unwind();
}

static inline void cextend_th_arg_error(int arg, const char *fmt, ...)
{
    char detail[CEXTEND_TH_ERROR_SIZE - 32];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    THError("invalid argument %d: %s", arg, detail);
}

#define THArgCheck(COND, ARG, ...) \
    do { if (!(COND)) cextend_th_arg_error((ARG), __VA_ARGS__); } while (0)
#define THAssertMsg(EXP, ...) \
    do { if (!(EXP)) THError(__VA_ARGS__); } while (0)
#define THAssert(EXP) THAssertMsg(EXP, "assertion `%s' failed", #EXP)

static inline void *cextend_th_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        THError("TH: out of memory (allocating %zu bytes)", bytes);
    return p;
}

#define TH_DEFINE_TENSOR_TYPE(Name, SName, real)                                                  \
    typedef struct SName {                                                                        \
        real *data;                                                                               \
        int64_t size;             /* elements */                                                  \
        int refcount;                                                                             \
        int flags;                /* TH_STORAGE_OWNS_DATA | TH_HEAP */                            \
    } SName;                                                                                      \
    typedef struct Name {                                                                         \
        int64_t size[TH_MAX_DIMS];                                                                \
        int64_t stride[TH_MAX_DIMS];                                                              \
        int nDimension;                                                                           \
        SName *storage;                                                                           \
        ptrdiff_t storageOffset;  /* elements */                                                  \
        int refcount;                                                                             \
        int flags;                /* TH_HEAP */                                                   \
    } Name;

/* ---- storage ------------------------------------------------------------------------ */
#define TH_DEFINE_STORAGE_API(SName, real)                                                        \
    static inline SName *SName##_new(void)                                                        \
    {                                                                                             \
        SName *s = (SName *)calloc(1, sizeof(SName));                                             \
        if (!s) {                                                                                 \
            THError("TH: out of memory (a storage)");                                             \
            return NULL;                                                                          \
        }                                                                                         \
        s->refcount = 1;                                                                          \
        s->flags = TH_HEAP;                                                                       \
        cextend_th_track(1);                                                                      \
        return s;                                                                                 \
    }                                                                                             \
    static inline real *SName##_data(const SName *s) { return s ? s->data : NULL; }               \
    static inline ptrdiff_t SName##_size(const SName *s) { return s ? (ptrdiff_t)s->size : 0; }   \
    static inline void SName##_retain(SName *s)                                                   \
    {                                                                                             \
        if (s)                                                                                    \
            ++s->refcount;                                                                        \
    }                                                                                             \
    static inline void SName##_free(SName *s)                                                     \
    {                                                                                             \
        if (!s || --s->refcount > 0)                                                              \
            return;                                                                               \
        if (s->flags & TH_STORAGE_OWNS_DATA)                                                      \
            free(s->data);                                                                        \
        if (s->flags & TH_HEAP) {                                                                 \
            free(s);                                                                              \
            cextend_th_track(-1);                                                                 \
        }                                                                                         \
    }                                                                                             \
    /* Exactly `size` elements, keeping the first min(old, new); memory                           \
     * lent by Python is never reallocated: a larger storage is a copy. */                        \
    static inline int SName##_resize(SName *s, int64_t size)                                      \
    {                                                                                             \
        if (!s || size < 0) {                                                                     \
            THError("TH: cannot resize %s storage to %lld elements", s ? "a" : "a NULL",          \
                    (long long)size);                                                             \
            return -1;                                                                            \
        }                                                                                         \
        if (size <= s->size && !(s->flags & TH_STORAGE_OWNS_DATA)) {                              \
            s->size = size;                                                                       \
            return 0;                                                                             \
        }                                                                                         \
        if ((uint64_t)size > (uint64_t)(PTRDIFF_MAX / (ptrdiff_t)sizeof(real))) {                 \
            THError("TH: a storage of %lld elements is too large", (long long)size);              \
            return -1;                                                                            \
        }                                                                                         \
        real *grown = (real *)cextend_th_alloc((size_t)size * sizeof(real));                      \
        if (!grown)                                                                               \
            return -1;                                                                            \
        if (s->data && s->size > 0)                                                               \
            memcpy(grown, s->data, (size_t)(s->size < size ? s->size : size) * sizeof(real));     \
        if (s->flags & TH_STORAGE_OWNS_DATA)                                                      \
            free(s->data);                                                                        \
        s->data = grown;                                                                          \
        s->size = size;                                                                           \
        s->flags |= TH_STORAGE_OWNS_DATA;                                                         \
        return 0;                                                                                 \
    }                                                                                             \
    static inline SName *SName##_newWithSize(ptrdiff_t size)                                      \
    {                                                                                             \
        SName *s = SName##_new();                                                                 \
        if (s && SName##_resize(s, size) != 0) {                                                  \
            SName##_free(s);                                                                      \
            return NULL;                                                                          \
        }                                                                                         \
        return s;                                                                                 \
    }                                                                                             \
    static inline void SName##_fill(SName *s, real value)                                         \
    {                                                                                             \
        for (int64_t i = 0; s && i < s->size; ++i)                                                \
            s->data[i] = value;                                                                   \
    }

/* ---- tensor: lifetime, queries, views ---------------------------------------------------- */
#define TH_DEFINE_TENSOR_BASICS(Name, SName, real)                                                \
    static inline Name *Name##_new(void)                                                          \
    {                                                                                             \
        Name *t = (Name *)calloc(1, sizeof(Name));                                                \
        if (!t) {                                                                                 \
            THError("TH: out of memory (a tensor)");                                              \
            return NULL;                                                                          \
        }                                                                                         \
        t->refcount = 1;                                                                          \
        t->flags = TH_HEAP;                                                                       \
        cextend_th_track(1);                                                                      \
        return t;                                                                                 \
    }                                                                                             \
    static inline void Name##_retain(Name *t)                                                     \
    {                                                                                             \
        if (t)                                                                                    \
            ++t->refcount;                                                                        \
    }                                                                                             \
    static inline void Name##_free(Name *t)                                                       \
    {                                                                                             \
        if (!t || --t->refcount > 0)                                                              \
            return;                                                                               \
        SName##_free(t->storage);                                                                 \
        if (t->flags & TH_HEAP) {                                                                 \
            free(t);                                                                              \
            cextend_th_track(-1);                                                                 \
        }                                                                                         \
    }                                                                                             \
    static inline SName *Name##_storage(const Name *t) { return t->storage; }                     \
    static inline ptrdiff_t Name##_storageOffset(const Name *t) { return t->storageOffset; }      \
    static inline real *Name##_data(const Name *t)                                                \
    {                                                                                             \
        return t->storage && t->storage->data ? t->storage->data + t->storageOffset : NULL;       \
    }                                                                                             \
    static inline int Name##_nDimension(const Name *t) { return t->nDimension; }                  \
    static inline int Name##_dim(const Name *t) { return t->nDimension; }                         \
    static inline int64_t Name##_size(const Name *t, int dim)                                     \
    {                                                                                             \
        if (dim < 0 || dim >= t->nDimension) {                                                    \
            cextend_th_arg_error(2, "dimension %d out of range of %dD tensor", dim, t->nDimension); \
            return 0;                                                                             \
        }                                                                                         \
        return t->size[dim];                                                                      \
    }                                                                                             \
    static inline int64_t Name##_stride(const Name *t, int dim)                                   \
    {                                                                                             \
        if (dim < 0 || dim >= t->nDimension) {                                                    \
            cextend_th_arg_error(2, "dimension %d out of range of %dD tensor", dim, t->nDimension); \
            return 0;                                                                             \
        }                                                                                         \
        return t->stride[dim];                                                                    \
    }                                                                                             \
    static inline ptrdiff_t Name##_nElement(const Name *t)                                        \
    {                                                                                             \
        if (t->nDimension == 0)                                                                   \
            return 0;                                                                             \
        ptrdiff_t n = 1;                                                                          \
        for (int d = 0; d < t->nDimension; ++d)                                                   \
            n *= (ptrdiff_t)t->size[d];                                                           \
        return n;                                                                                 \
    }                                                                                             \
    static inline int Name##_isContiguous(const Name *t)                                          \
    {                                                                                             \
        int64_t expected = 1;                                                                     \
        for (int d = t->nDimension - 1; d >= 0; --d) {                                            \
            if (t->size[d] == 1)                                                                  \
                continue;                                                                         \
            if (t->stride[d] != expected)                                                         \
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
    /* self becomes a view of src's storage with src's geometry. */                               \
    static inline void Name##_set(Name *self, Name *src)                                          \
    {                                                                                             \
        if (self == src)                                                                          \
            return;                                                                               \
        SName##_retain(src->storage);                                                             \
        SName##_free(self->storage);                                                              \
        self->storage = src->storage;                                                             \
        self->storageOffset = src->storageOffset;                                                 \
        self->nDimension = src->nDimension;                                                       \
        memcpy(self->size, src->size, sizeof self->size);                                         \
        memcpy(self->stride, src->stride, sizeof self->stride);                                   \
    }                                                                                             \
    static inline Name *Name##_newWithTensor(Name *src)                                           \
    {                                                                                             \
        Name *t = Name##_new();                                                                   \
        if (t)                                                                                    \
            Name##_set(t, src);                                                                   \
        return t;                                                                                 \
    }                                                                                             \
    /* self = src restricted to [first, first + size) along dim (src NULL: self). */              \
    static inline void Name##_narrow(Name *self, Name *src, int dim, int64_t first, int64_t size) \
    {                                                                                             \
        if (!src)                                                                                 \
            src = self;                                                                           \
        if (dim < 0 || dim >= src->nDimension) {                                                  \
            cextend_th_arg_error(2, "dimension %d out of range of %dD tensor", dim, src->nDimension); \
            return;                                                                               \
        }                                                                                         \
        if (first < 0 || first >= src->size[dim]) {                                               \
            cextend_th_arg_error(3, "out of range: firstIndex %lld for size %lld", (long long)first, \
                                 (long long)src->size[dim]);                                      \
            return;                                                                               \
        }                                                                                         \
        if (size <= 0 || first > src->size[dim] - size) {                                         \
            cextend_th_arg_error(4, "out of range: size %lld from firstIndex %lld of %lld",       \
                                 (long long)size, (long long)first, (long long)src->size[dim]);   \
            return;                                                                               \
        }                                                                                         \
        Name##_set(self, src);                                                                    \
        self->storageOffset += (ptrdiff_t)(first * self->stride[dim]);                            \
        self->size[dim] = size;                                                                   \
    }                                                                                             \
    /* self = src with dim removed at index (src must have >= 2 dims, as TH). */                  \
    static inline void Name##_select(Name *self, Name *src, int dim, int64_t index)               \
    {                                                                                             \
        if (!src)                                                                                 \
            src = self;                                                                           \
        if (src->nDimension <= 1) {                                                               \
            cextend_th_arg_error(1, "cannot select on a vector");                                 \
            return;                                                                               \
        }                                                                                         \
        if (dim < 0 || dim >= src->nDimension) {                                                  \
            cextend_th_arg_error(2, "out of range: dimension %d of %dD tensor", dim, src->nDimension); \
            return;                                                                               \
        }                                                                                         \
        if (index < 0 || index >= src->size[dim]) {                                               \
            cextend_th_arg_error(3, "out of range: index %lld for size %lld", (long long)index,    \
                                 (long long)src->size[dim]);                                      \
            return;                                                                               \
        }                                                                                         \
        Name##_set(self, src);                                                                    \
        self->storageOffset += (ptrdiff_t)(index * self->stride[dim]);                            \
        for (int d = dim; d < self->nDimension - 1; ++d) {                                        \
            self->size[d] = self->size[d + 1];                                                    \
            self->stride[d] = self->stride[d + 1];                                                \
        }                                                                                         \
        self->nDimension--;                                                                       \
    }                                                                                             \
    static inline void Name##_transpose(Name *self, Name *src, int dim1, int dim2)                \
    {                                                                                             \
        if (!src)                                                                                 \
            src = self;                                                                           \
        if (dim1 < 0 || dim1 >= src->nDimension) {                                                \
            cextend_th_arg_error(1, "out of range: dimension %d of %dD tensor", dim1, src->nDimension); \
            return;                                                                               \
        }                                                                                         \
        if (dim2 < 0 || dim2 >= src->nDimension) {                                                \
            cextend_th_arg_error(2, "out of range: dimension %d of %dD tensor", dim2, src->nDimension); \
            return;                                                                               \
        }                                                                                         \
        Name##_set(self, src);                                                                    \
        int64_t z = self->size[dim1];                                                             \
        self->size[dim1] = self->size[dim2];                                                      \
        self->size[dim2] = z;                                                                     \
        z = self->stride[dim1];                                                                   \
        self->stride[dim1] = self->stride[dim2];                                                  \
        self->stride[dim2] = z;                                                                   \
    }                                                                                             \
    static inline Name *Name##_newNarrow(Name *src, int dim, int64_t first, int64_t size)         \
    {                                                                                             \
        Name *t = Name##_newWithTensor(src);                                                      \
        if (t)                                                                                    \
            Name##_narrow(t, NULL, dim, first, size);                                             \
        return t;                                                                                 \
    }                                                                                             \
    static inline Name *Name##_newSelect(Name *src, int dim, int64_t index)                       \
    {                                                                                             \
        Name *t = Name##_newWithTensor(src);                                                      \
        if (t)                                                                                    \
            Name##_select(t, NULL, dim, index);                                                   \
        return t;                                                                                 \
    }                                                                                             \
    static inline Name *Name##_newTranspose(Name *src, int dim1, int dim2)                        \
    {                                                                                             \
        Name *t = Name##_newWithTensor(src);                                                      \
        if (t)                                                                                    \
            Name##_transpose(t, NULL, dim1, dim2);                                                \
        return t;                                                                                 \
    }                                                                                             \
    /* The storage offset of row-major element `flat` of t (any strides). */                      \
    static inline ptrdiff_t Name##_offsetOf(const Name *t, ptrdiff_t flat)                        \
    {                                                                                             \
        ptrdiff_t offset = 0;                                                                     \
        for (int d = t->nDimension - 1; d >= 0; --d) {                                            \
            const ptrdiff_t extent = t->size[d] ? (ptrdiff_t)t->size[d] : 1;                       \
            offset += (flat % extent) * (ptrdiff_t)t->stride[d];                                  \
            flat /= extent;                                                                       \
        }                                                                                         \
        return offset;                                                                            \
    }

/* ---- tensor: resizing --------------------------------------------------------------- */
#define TH_DEFINE_TENSOR_RESIZE(Name, SName, real)                                                \
    /* TH's resizeNd: sizes stop at the first one <= 0; a tensor that already                     \
     * has these sizes (and the given strides, where stride[d] >= 0) is left                      \
     * as it is; otherwise strides are the given ones or contiguous, and the                      \
     * storage grows if it is too small.  stride may be NULL. */                                  \
    static inline void Name##_resizeNd(Name *self, int nDimension, const int64_t *size,           \
                                       const int64_t *stride)                                     \
    {                                                                                             \
        if (nDimension < 0 || nDimension > TH_MAX_DIMS) {                                         \
            cextend_th_arg_error(2, "a TH tensor has 0 to %d dimensions, got %d", TH_MAX_DIMS,    \
                                 nDimension);                                                     \
            return;                                                                               \
        }                                                                                         \
        int dims = 0, same = 1;                                                                   \
        for (int d = 0; d < nDimension && size[d] > 0; ++d) {                                     \
            ++dims;                                                                               \
            if (self->nDimension > d && size[d] != self->size[d])                                 \
                same = 0;                                                                         \
            if (self->nDimension > d && stride && stride[d] >= 0 && stride[d] != self->stride[d]) \
                same = 0;                                                                         \
        }                                                                                         \
        if (dims != self->nDimension)                                                             \
            same = 0;                                                                             \
        if (same)                                                                                 \
            return;                                                                               \
        int64_t new_size[TH_MAX_DIMS], new_stride[TH_MAX_DIMS], span = 1;                         \
        for (int d = dims - 1; d >= 0; --d) {                                                     \
            new_size[d] = size[d];                                                                \
            if (stride && stride[d] >= 0)                                                         \
                new_stride[d] = stride[d];                                                        \
            else if (d == dims - 1)                                                               \
                new_stride[d] = 1;                                                                \
            else if (__builtin_mul_overflow(new_size[d + 1], new_stride[d + 1], &new_stride[d])) { \
                cextend_th_arg_error(3, "the tensor's size overflows");                           \
                return;                                                                           \
            }                                                                                     \
        }                                                                                         \
        for (int d = 0; d < dims; ++d) {                                                          \
            int64_t reach;                                                                        \
            if (__builtin_mul_overflow(new_size[d] - 1, new_stride[d], &reach) ||                 \
                __builtin_add_overflow(span, reach, &span)) {                                     \
                cextend_th_arg_error(3, "the tensor's size overflows");                           \
                return;                                                                           \
            }                                                                                     \
        }                                                                                         \
        if (dims > 0) {                                                                           \
            const int64_t needed = span + (int64_t)self->storageOffset;                           \
            if (!self->storage && !(self->storage = SName##_new()))                               \
                return;                                                                           \
            if (needed > self->storage->size && SName##_resize(self->storage, needed) != 0)       \
                return;                                                                           \
        }                                                                                         \
        for (int d = 0; d < dims; ++d) {                                                          \
            self->size[d] = new_size[d];                                                          \
            self->stride[d] = new_stride[d];                                                      \
        }                                                                                         \
        self->nDimension = dims;                                                                  \
    }                                                                                             \
    static inline void Name##_resize1d(Name *t, int64_t s0)                                       \
    {                                                                                             \
        int64_t s[1] = {s0};                                                                      \
        Name##_resizeNd(t, 1, s, NULL);                                                           \
    }                                                                                             \
    static inline void Name##_resize2d(Name *t, int64_t s0, int64_t s1)                           \
    {                                                                                             \
        int64_t s[2] = {s0, s1};                                                                  \
        Name##_resizeNd(t, 2, s, NULL);                                                           \
    }                                                                                             \
    static inline void Name##_resize3d(Name *t, int64_t s0, int64_t s1, int64_t s2)               \
    {                                                                                             \
        int64_t s[3] = {s0, s1, s2};                                                              \
        Name##_resizeNd(t, 3, s, NULL);                                                           \
    }                                                                                             \
    static inline void Name##_resize4d(Name *t, int64_t s0, int64_t s1, int64_t s2, int64_t s3)   \
    {                                                                                             \
        int64_t s[4] = {s0, s1, s2, s3};                                                          \
        Name##_resizeNd(t, 4, s, NULL);                                                           \
    }                                                                                             \
    static inline void Name##_resizeAs(Name *self, Name *src)                                     \
    {                                                                                             \
        if (!Name##_isSameSizeAs(self, src))                                                      \
            Name##_resizeNd(self, src->nDimension, src->size, NULL);                              \
    }                                                                                             \
    static inline Name *Name##_newWithSize1d(int64_t s0)                                          \
    {                                                                                             \
        Name *t = Name##_new();                                                                   \
        if (t)                                                                                    \
            Name##_resize1d(t, s0);                                                               \
        return t;                                                                                 \
    }                                                                                             \
    static inline Name *Name##_newWithSize2d(int64_t s0, int64_t s1)                              \
    {                                                                                             \
        Name *t = Name##_new();                                                                   \
        if (t)                                                                                    \
            Name##_resize2d(t, s0, s1);                                                           \
        return t;                                                                                 \
    }                                                                                             \
    static inline Name *Name##_newWithSize3d(int64_t s0, int64_t s1, int64_t s2)                  \
    {                                                                                             \
        Name *t = Name##_new();                                                                   \
        if (t)                                                                                    \
            Name##_resize3d(t, s0, s1, s2);                                                       \
        return t;                                                                                 \
    }                                                                                             \
    static inline Name *Name##_newWithSize4d(int64_t s0, int64_t s1, int64_t s2, int64_t s3)      \
    {                                                                                             \
        Name *t = Name##_new();                                                                   \
        if (t)                                                                                    \
            Name##_resize4d(t, s0, s1, s2, s3);                                                   \
        return t;                                                                                 \
    }

/* ---- tensor: math (TH's semantics; results through each tensor's strides) ------------------- */
#define TH_DEFINE_TENSOR_MATH(Name, SName, real, accreal)                                         \
    static inline void Name##_fill(Name *t, real value)                                           \
    {                                                                                             \
        real *data = Name##_data(t);                                                              \
        const ptrdiff_t n = Name##_nElement(t);                                                   \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            data[Name##_offsetOf(t, i)] = value;                                                  \
    }                                                                                             \
    static inline void Name##_zero(Name *t) { Name##_fill(t, (real)0); }                          \
    /* t's elements = src's, in row-major order of each; same element count. */                   \
    static inline void Name##_copy(Name *t, Name *src)                                            \
    {                                                                                             \
        const ptrdiff_t n = Name##_nElement(t);                                                   \
        if (Name##_nElement(src) != n) {                                                          \
            THError("inconsistent tensor size, expected tensor and src to have the same number "  \
                    "of elements, but got %td and %td elements respectively", n,                  \
                    Name##_nElement(src));                                                        \
            return;                                                                               \
        }                                                                                         \
        real *td = Name##_data(t), *sd = Name##_data(src);                                        \
        if (n == 0)                                                                               \
            return;                                                                               \
        if (t->storage != src->storage) {                                                         \
            for (ptrdiff_t i = 0; i < n; ++i)                                                     \
                td[Name##_offsetOf(t, i)] = sd[Name##_offsetOf(src, i)];                          \
            return;                                                                               \
        }                                                                                         \
        /* One storage: read everything first, as the layouts may overlap. */                     \
        real *tmp = (real *)cextend_th_alloc((size_t)n * sizeof(real));                           \
        if (!tmp)                                                                                 \
            return;                                                                               \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            tmp[i] = sd[Name##_offsetOf(src, i)];                                                 \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            td[Name##_offsetOf(t, i)] = tmp[i];                                                   \
        free(tmp);                                                                                \
    }                                                                                             \
    static inline Name *Name##_newClone(Name *src)                                                \
    {                                                                                             \
        Name *t = Name##_new();                                                                   \
        if (!t)                                                                                   \
            return NULL;                                                                          \
        Name##_resizeAs(t, src);                                                                  \
        Name##_copy(t, src);                                                                      \
        return t;                                                                                 \
    }                                                                                             \
    static inline Name *Name##_newContiguous(Name *src)                                           \
    {                                                                                             \
        if (!Name##_isContiguous(src))                                                            \
            return Name##_newClone(src);                                                          \
        Name##_retain(src);                                                                       \
        return src;                                                                               \
    }                                                                                             \
    /* r resized as t (kept if it already has t's size); 0 if it then fits. */                    \
    static inline int Name##_prepareResult(Name *r, Name *t)                                      \
    {                                                                                             \
        if (r != t)                                                                               \
            Name##_resizeAs(r, t);                                                                \
        return Name##_isSameSizeAs(r, t) ? 0 : -1;                                                \
    }                                                                                             \
    static inline void Name##_add(Name *r, Name *t, real value)                                   \
    {                                                                                             \
        if (Name##_prepareResult(r, t))                                                           \
            return;                                                                               \
        real *rd = Name##_data(r), *td = Name##_data(t);                                          \
        const ptrdiff_t n = Name##_nElement(t);                                                   \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            rd[Name##_offsetOf(r, i)] = (real)(td[Name##_offsetOf(t, i)] + value);                \
    }                                                                                             \
    static inline void Name##_mul(Name *r, Name *t, real value)                                   \
    {                                                                                             \
        if (Name##_prepareResult(r, t))                                                           \
            return;                                                                               \
        real *rd = Name##_data(r), *td = Name##_data(t);                                          \
        const ptrdiff_t n = Name##_nElement(t);                                                   \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            rd[Name##_offsetOf(r, i)] = (real)(td[Name##_offsetOf(t, i)] * value);                \
    }                                                                                             \
    /* r = t + value * src, elementwise (src: t's element count). */                              \
    static inline void Name##_cadd(Name *r, Name *t, real value, Name *src)                       \
    {                                                                                             \
        const ptrdiff_t n = Name##_nElement(t);                                                   \
        if (Name##_nElement(src) != n) {                                                          \
            cextend_th_arg_error(3, "sizes do not match: %td and %td elements", n,                \
                                 Name##_nElement(src));                                           \
            return;                                                                               \
        }                                                                                         \
        if (Name##_prepareResult(r, t))                                                           \
            return;                                                                               \
        real *rd = Name##_data(r), *td = Name##_data(t), *sd = Name##_data(src);                  \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            rd[Name##_offsetOf(r, i)] = (real)(td[Name##_offsetOf(t, i)] +                        \
                                               value * sd[Name##_offsetOf(src, i)]);              \
    }                                                                                             \
    /* r = t * src, elementwise. */                                                               \
    static inline void Name##_cmul(Name *r, Name *t, Name *src)                                   \
    {                                                                                             \
        const ptrdiff_t n = Name##_nElement(t);                                                   \
        if (Name##_nElement(src) != n) {                                                          \
            cextend_th_arg_error(3, "sizes do not match: %td and %td elements", n,                \
                                 Name##_nElement(src));                                           \
            return;                                                                               \
        }                                                                                         \
        if (Name##_prepareResult(r, t))                                                           \
            return;                                                                               \
        real *rd = Name##_data(r), *td = Name##_data(t), *sd = Name##_data(src);                  \
        for (ptrdiff_t i = 0; i < n; ++i)                                                         \
            rd[Name##_offsetOf(r, i)] = (real)(td[Name##_offsetOf(t, i)] * sd[Name##_offsetOf(src, i)]); \
    }                                                                                             \
    /* r = beta * t + alpha * sum over the batch of b1[i] . b2[i] (batched: 3-D                   \
     * b1, b2; else the 2-D matrices m1 = b1, m2 = b2).  t is not read when                       \
     * beta is 0.  The products go to a scratch first, so r may alias anything. */                \
    static inline void Name##_gemm(Name *r, real beta, Name *t, real alpha, Name *b1, Name *b2,    \
                                   int batched)                                                   \
    {                                                                                             \
        const int dims = batched ? 3 : 2, base = batched ? 1 : 0;                                 \
        if (b1->nDimension != dims || b2->nDimension != dims) {                                   \
            THError("%s expected, got %dD, %dD tensors", batched ? "3D tensors" : "matrices",      \
                    b1->nDimension, b2->nDimension);                                              \
            return;                                                                               \
        }                                                                                         \
        const int64_t batches = batched ? b1->size[0] : 1;                                        \
        if (batched && b2->size[0] != batches) {                                                  \
            THError("equal number of batches expected, got %lld, %lld", (long long)batches,       \
                    (long long)b2->size[0]);                                                      \
            return;                                                                               \
        }                                                                                         \
        const int64_t n = b1->size[base], k = b1->size[base + 1], p = b2->size[base + 1];         \
        if (b2->size[base] != k) {                                                                \
            THError("size mismatch, m1: [%lld x %lld], m2: [%lld x %lld]", (long long)n,          \
                    (long long)k, (long long)b2->size[base], (long long)p);                       \
            return;                                                                               \
        }                                                                                         \
        if (t->nDimension != 2 || t->size[0] != n || t->size[1] != p) {                           \
            THError("size mismatch, t: %dD, expected [%lld x %lld]", t->nDimension, (long long)n,  \
                    (long long)p);                                                                \
            return;                                                                               \
        }                                                                                         \
        accreal *prod = (accreal *)cextend_th_alloc((size_t)(n * p) * sizeof(accreal));           \
        if (!prod)                                                                                \
            return;                                                                               \
        const real *d1 = Name##_data(b1), *d2 = Name##_data(b2), *dt = Name##_data(t);            \
        for (int64_t i = 0; i < n * p; ++i)                                                       \
            prod[i] = 0;                                                                          \
        for (int64_t b = 0; b < batches; ++b) {                                                   \
            const real *m1 = d1 + (batched ? b * b1->stride[0] : 0);                              \
            const real *m2 = d2 + (batched ? b * b2->stride[0] : 0);                              \
            for (int64_t i = 0; i < n; ++i)                                                       \
                for (int64_t j = 0; j < p; ++j) {                                                 \
                    accreal sum = 0;                                                              \
                    for (int64_t l = 0; l < k; ++l)                                               \
                        sum += (accreal)m1[i * b1->stride[base] + l * b1->stride[base + 1]] *     \
                               (accreal)m2[l * b2->stride[base] + j * b2->stride[base + 1]];      \
                    prod[i * p + j] += sum;                                                       \
                }                                                                                 \
        }                                                                                         \
        if (beta != 0)                                                                            \
            for (int64_t i = 0; i < n * p; ++i)                                                   \
                prod[i] = (accreal)alpha * prod[i] +                                              \
                          (accreal)beta * (accreal)dt[(i / p) * t->stride[0] + (i % p) * t->stride[1]]; \
        else                                                                                      \
            for (int64_t i = 0; i < n * p; ++i)                                                   \
                prod[i] = (accreal)alpha * prod[i];                                               \
        if (Name##_prepareResult(r, t) == 0) {                                                    \
            real *rd = Name##_data(r);                                                            \
            for (int64_t i = 0; i < n * p; ++i)                                                   \
                rd[(i / p) * r->stride[0] + (i % p) * r->stride[1]] = (real)prod[i];              \
        }                                                                                         \
        free(prod);                                                                               \
    }                                                                                             \
    static inline void Name##_addmm(Name *r, real beta, Name *t, real alpha, Name *m1, Name *m2)   \
    {                                                                                             \
        Name##_gemm(r, beta, t, alpha, m1, m2, 0);                                                \
    }                                                                                             \
    static inline void Name##_addbmm(Name *r, real beta, Name *t, real alpha, Name *b1, Name *b2)  \
    {                                                                                             \
        Name##_gemm(r, beta, t, alpha, b1, b2, 1);                                                \
    }

#define TH_DEFINE_ALL(Name, SName, real, accreal)                                                 \
    TH_DEFINE_TENSOR_TYPE(Name, SName, real)                                                      \
    TH_DEFINE_STORAGE_API(SName, real)                                                            \
    TH_DEFINE_TENSOR_BASICS(Name, SName, real)                                                    \
    TH_DEFINE_TENSOR_RESIZE(Name, SName, real)                                                    \
    TH_DEFINE_TENSOR_MATH(Name, SName, real, accreal)

TH_DEFINE_ALL(THFloatTensor, THFloatStorage, float, double)
TH_DEFINE_ALL(THDoubleTensor, THDoubleStorage, double, double)
TH_DEFINE_ALL(THLongTensor, THLongStorage, int64_t, int64_t)
TH_DEFINE_ALL(THIntTensor, THIntStorage, int32_t, int64_t)
TH_DEFINE_ALL(THByteTensor, THByteStorage, uint8_t, int64_t)

#ifdef __cplusplus
}
#endif

#endif /* CEXTEND_TH_H */
