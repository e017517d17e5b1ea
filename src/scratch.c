/*
 * scratch.c -- each thread's kept buffers for the kernels' temporaries
 * (GEMM packing, convolution patches).
 *
 * A temporary of a few hundred KiB from malloc is mapped fresh from the
 * kernel and unmapped on free once it passes glibc's mmap threshold (and a
 * heap top that large is trimmed back), so every call paid a page fault
 * per 4 KiB touched: inside the CNN demo's training step its convolutions
 * ran 3 to 6 times slower than alone (forward 367 us instead of 61), the
 * step spending more time faulting than computing.  So a thread keeps its
 * largest buffer of each kind, up to CX_SCRATCH_KEEP bytes (a larger one
 * is freed when its call ends: its work dwarfs the faults), and frees
 * them when it exits.  Contents are never read before a kernel writes
 * them, so reuse changes no result.
 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

#define CX_SCRATCH_KEEP ((size_t)64 << 20)

typedef struct {
    void *buffer[CX_SCRATCH_KINDS];
    size_t size[CX_SCRATCH_KINDS];
} cx_scratch_set;

static _Thread_local cx_scratch_set *thread_set;
static pthread_key_t exit_key;
static int exit_key_made;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* Run by the exiting thread itself: a kernel called after it (from another
 * key's destructor) starts a new set. */
static void release_set(void *arg)
{
    cx_scratch_set *set = arg;
    for (int kind = 0; kind < CX_SCRATCH_KINDS; ++kind)
        free(set->buffer[kind]);
    free(set);
    if (thread_set == set)
        thread_set = NULL;
}

static void make_exit_key(void)
{
    exit_key_made = pthread_key_create(&exit_key, release_set) == 0;
}

void *cx_scratch(int kind, size_t bytes)
{
    cx_scratch_set *set = thread_set;
    if (!set) {
        pthread_once(&exit_key_once, make_exit_key);
        set = calloc(1, sizeof *set);
        if (!set)
            return NULL;
        /* Without an exit key (none left), the set lives as long as the process. */
        if (exit_key_made)
            pthread_setspecific(exit_key, set);
        thread_set = set;
    }
    if (set->buffer[kind] && set->size[kind] >= bytes)
        return set->buffer[kind];
    free(set->buffer[kind]);
    set->buffer[kind] = NULL;
    set->size[kind] = 0;
    if (bytes > SIZE_MAX - 63)
        return NULL;
    const size_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;     /* aligned_alloc wants a multiple */
    void *buffer = aligned_alloc(64, rounded);
    if (!buffer)
        return NULL;
    set->buffer[kind] = buffer;
    set->size[kind] = rounded;
    return buffer;
}

void cx_scratch_done(int kind)
{
    cx_scratch_set *set = thread_set;
    if (set && set->size[kind] > CX_SCRATCH_KEEP) {
        free(set->buffer[kind]);
        set->buffer[kind] = NULL;
        set->size[kind] = 0;
    }
}
