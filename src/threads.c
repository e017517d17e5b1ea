/*
 * threads.c -- how many threads the kernels use.
 *
 * Threads split a product's output into column (or row) chunks only; the
 * reduction over k is never split, so every element is computed by the
 * same arithmetic whatever the count, and results are bitwise identical.
 */
#include <stdatomic.h>

#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many multiply-adds (about 10 us on one core) a fork/join
 * costs more than it saves: 32x128x128 ran slower on two threads. */
#define PARALLEL_MIN_WORK (1 << 21)

static _Atomic int requested_threads = 0;   /* 0: not set, use OpenMP's default */

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>

/* A child forked after a parallel kernel inherits an OpenMP pool whose
 * threads did not come along, and hangs in its next parallel region (as
 * torch's does).  The child starts single-threaded instead: its kernels
 * never enter a parallel region with more than one thread, and give the
 * same bits.  It may ask for more with set_num_threads, at libgomp's risk. */
static void single_threaded_child(void)
{
    atomic_store(&requested_threads, 1);
}

__attribute__((constructor)) static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, single_threaded_child);
}
#endif

int cextend_set_num_threads(int n)
{
    if (n < 1)
        return cx_illegal("cextend_set_num_threads", 1, "n", "must be >= 1, got %d", n);
    atomic_store(&requested_threads, n);
    return CEXTEND_OK;
}

int cextend_get_num_threads(void)
{
    int n = atomic_load(&requested_threads);
    if (n > 0)
        return n;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/*
 * Threads on a busy machine.  A parallel loop ends at a barrier, so it runs
 * at the pace of its slowest thread: when other processes keep cores busy,
 * a thread that shares a core with them waits for its time slice and the
 * whole loop waits with it (the CNN demo's step ran 2.3 times slower on
 * 2 threads than on 1 beside one busy process, on 2 cores).  So the kernels
 * use at most the cores other processes leave idle.
 *
 * What other processes use is measured, not guessed from the load average
 * (which counts this process's own threads, spinning OpenMP workers too,
 * and lags by a minute): over windows of SAMPLE_SECONDS, the machine's busy
 * CPU time from /proc/stat minus this process's own CPU time.  Sampling
 * costs a read of /proc/stat per window; between samples, a clock read.
 * Elsewhere than Linux the count is what was asked for.
 */
#define SAMPLE_SECONDS 0.2

#if defined(__linux__)
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int cores_busy_elsewhere = 0;
static double window_wall = -1.0, window_own = 0.0;
static unsigned long long window_busy_ticks = 0;

static double seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The machine's busy time in clock ticks: everything but idle and iowait
 * (steal counts as busy: the hypervisor gave that time to someone else). */
static int busy_ticks(unsigned long long *busy)
{
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return 0;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
                     &user, &nice, &system, &idle, &iowait, &irq, &softirq, &steal);
    fclose(f);
    if (got < 4)
        return 0;
    *busy = user + nice + system + irq + softirq + steal;
    return 1;
}

/* Before the first window closes: the processes running right now, less
 * the caller (no OpenMP worker of ours has run yet). */
static int running_elsewhere_now(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (f == NULL)
        return 0;
    double one, five, fifteen;
    int running = 0, total = 0;
    int got = fscanf(f, "%lf %lf %lf %d/%d", &one, &five, &fifteen, &running, &total);
    fclose(f);
    return got == 5 && running > 1 ? running - 1 : 0;
}

static void sample_other_processes(void)
{
    if (pthread_mutex_trylock(&sample_lock) != 0)
        return;                         /* another thread is sampling: use what it had */
    const double wall = seconds(CLOCK_MONOTONIC);
    if (window_wall < 0.0)
        atomic_store(&cores_busy_elsewhere, running_elsewhere_now());
    if (window_wall < 0.0 || wall - window_wall >= SAMPLE_SECONDS) {
        const double own = seconds(CLOCK_PROCESS_CPUTIME_ID);
        unsigned long long busy;
        const long ticks_per_second = sysconf(_SC_CLK_TCK);
        if (ticks_per_second > 0 && busy_ticks(&busy)) {
            if (window_wall >= 0.0 && busy >= window_busy_ticks) {
                const double busy_seconds = (double)(busy - window_busy_ticks) / (double)ticks_per_second;
                const double others = (busy_seconds - (own - window_own)) / (wall - window_wall);
                atomic_store(&cores_busy_elsewhere, others > 0.5 ? (int)(others + 0.5) : 0);
            }
            window_wall = wall;
            window_own = own;
            window_busy_ticks = busy;
        }
    }
    pthread_mutex_unlock(&sample_lock);
}

static int cores_online(void)
{
#ifdef _OPENMP
    return omp_get_num_procs();         /* the cores this process may run on */
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
#endif
}
#endif

int cextend_threads_available(int wanted)
{
    if (wanted <= 1)
        return 1;
#if defined(__linux__)
    sample_other_processes();
    int idle = cores_online() - atomic_load(&cores_busy_elsewhere);
    if (idle < 1)
        idle = 1;
    return wanted < idle ? wanted : idle;
#else
    return wanted;
#endif
}

int cx_threads_for(double work)
{
    int n = cextend_get_num_threads();
    if (n <= 1 || work < PARALLEL_MIN_WORK)
        return 1;
    return cextend_threads_available(n);
}
