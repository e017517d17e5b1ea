/*
 * status.c -- the thread-local last-error message and argument checks.
 *
 * Every entry point validates its arguments here before touching memory,
 * so an illegal call returns a status and writes nothing.
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

/* One message per thread: concurrent callers never see each other's errors. */
static _Thread_local char last_error[512];

const char *cextend_last_error(void)
{
    return last_error;
}

static void set_message(const char *fn, const char *fmt, va_list args)
{
    int used = snprintf(last_error, sizeof last_error, "%s: ", fn);
    if (used < 0 || (size_t)used >= sizeof last_error)
        return;
    vsnprintf(last_error + used, sizeof last_error - (size_t)used, fmt, args);
}

int cx_fail(int status, const char *fn, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    set_message(fn, fmt, args);
    va_end(args);
    return status;
}

int cx_illegal(const char *fn, int pos, const char *name, const char *fmt, ...)
{
    char detail[384];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    return cx_fail(-pos, fn, "argument %d (%s) is illegal: %s", pos, name, detail);
}

int cx_check_size(const char *fn, int pos, const char *name, int64_t value)
{
    if (value < 0)
        return cx_illegal(fn, pos, name, "must be >= 0, got %lld", (long long)value);
    return 0;
}

/* elements * elem_size fits in a ptrdiff_t (pointer arithmetic stays defined). */
static int byte_count_fits(int64_t elements, size_t elem_size)
{
    int64_t bytes;
    return !__builtin_mul_overflow(elements, (int64_t)elem_size, &bytes) && bytes <= PTRDIFF_MAX;
}

int cx_check_matrix(const char *fn, const char *name, int nullable,
                    const void *ptr, int ptr_pos,
                    int64_t rows, int64_t cols,
                    int64_t ld, int ld_pos, const char *ld_name,
                    int trans, int trans_pos, const char *trans_name,
                    size_t elem_size)
{
    if (trans_pos > 0 && trans != 0 && trans != 1)
        return cx_illegal(fn, trans_pos, trans_name, "must be 0 or 1, got %d", trans);
    int64_t stored_rows = trans ? cols : rows;
    int64_t stored_cols = trans ? rows : cols;
    int has_elements = rows > 0 && cols > 0;
    if (ptr == NULL && has_elements && !nullable)
        return cx_illegal(fn, ptr_pos, name, "is NULL but the %lld x %lld operand has elements",
                          (long long)rows, (long long)cols);
    /* C may not read a float through a misaligned pointer (callers copy
     * such views first; cextend's Python layer does). */
    if (ptr != NULL && has_elements && (uintptr_t)ptr % elem_size != 0)
        return cx_illegal(fn, ptr_pos, name, "is not aligned to its %zu-byte elements", elem_size);
    int64_t min_ld = stored_cols > 1 ? stored_cols : 1;
    if (ld < min_ld)
        return cx_illegal(fn, ld_pos, ld_name, "must be >= %lld (max(1, stored row length)), got %lld",
                          (long long)min_ld, (long long)ld);
    if (has_elements) {
        /* The operand spans (stored_rows - 1) * ld + stored_cols elements. */
        int64_t span;
        if (__builtin_mul_overflow(stored_rows - 1, ld, &span) ||
            __builtin_add_overflow(span, stored_cols, &span) || !byte_count_fits(span, elem_size))
            return cx_illegal(fn, ld_pos, ld_name,
                              "%s spans more than PTRDIFF_MAX bytes (%lld x %lld with ld %lld)",
                              name, (long long)stored_rows, (long long)stored_cols, (long long)ld);
    }
    return 0;
}

int cx_check_vector(const char *fn, const char *name, int nullable,
                    const void *ptr, int ptr_pos,
                    int64_t count, int count_pos, const char *count_name,
                                size_t elem_size)
{
    if (ptr == NULL && count > 0 && !nullable)
        return cx_illegal(fn, ptr_pos, name, "is NULL but holds %lld elements", (long long)count);
    if (ptr != NULL && count > 0 && (uintptr_t)ptr % elem_size != 0)
        return cx_illegal(fn, ptr_pos, name, "is not aligned to its %zu-byte elements", elem_size);
    if (!byte_count_fits(count, elem_size))
        return cx_illegal(fn, count_pos, count_name, "%lld elements of %s overflow a byte count",
                          (long long)count, name);
    return 0;
}
