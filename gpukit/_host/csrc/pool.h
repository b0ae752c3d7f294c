/* gpukit's host thread pool: the spans of one kernel call run on persistent C threads,
 * handed over without Python's GIL. A hand-off through Python threads (a future, a lock,
 * the GIL taken by the worker and back) costs 40-45 us on the project's 2-core VM, the time
 * of a whole 256x256 pass; here the caller posts the call and bumps each worker's mailbox,
 * and a worker, spinning for a while after its last span (GK_SPIN_NS), starts within
 * a microsecond, or is woken from a futex once it has gone to sleep (Linux; elsewhere it
 * naps).
 *
 * The spans are not assigned: the caller and the workers claim them one at a time from a
 * shared counter, so a worker the scheduler has not run yet (a loaded machine: another
 * process on the core) costs nothing but its share, which the caller takes; the caller
 * waits only for spans a worker has started. Every span's result depends only on its
 * bounds, never on the thread that ran it.
 *
 * The thread count is the caller's, per call (gpukit/_host/parallel.py: the cores, capped
 * by the BLAS count a threadpoolctl limit sets). One call uses the pool at a time; a call
 * made while another holds it (another Python thread, or a span calling a kernel) runs its
 * spans one after the other on its own thread, with the same results.
 *
 * A spinning thread (a worker after its span, the caller waiting for the workers' last
 * spans) yields its core every few microseconds, as OpenBLAS's waiting threads do: BLAS's
 * threads, called next, take the core at once, and a worker the scheduler woke onto the
 * caller's own core (it does so on this project's VM, for tens of milliseconds at a time)
 * lets the caller run instead of holding it until the scheduler's tick, which made
 * such calls take 2-4x their time. A worker that spins through the Python between two
 * back-to-back calls is not woken for the second: each wake-up is a chance for that
 * placement, and while two threads take turns sleeping on one core, that core rarely
 * holds two runnable threads, so the scheduler sees nothing to move. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* How long a worker (and a caller waiting for its spans) spins before sleeping: longer
 * than the Python between two kernel calls of a training step, and between two passes
 * of a loop over 16 MB; a BLAS call that follows meanwhile takes the core (the spin
 * yields it) */
#ifndef GK_SPIN_NS
#define GK_SPIN_NS 200000
#endif
#define GK_MAX_WORKERS 255
#define GK_MAX_SPANS 0xffff /* the claim word's span count */
#ifndef GK_SPANS_PER_THREAD
#define GK_SPANS_PER_THREAD 4
#endif

typedef void (*gk_task)(const void *ctx, int k, int n);

/* one a cache line, so that a worker spinning on its own does not slow the others */
typedef struct {
    _Alignas(64) _Atomic unsigned seq; /* bumped by the caller for each call it posts */
    _Atomic int sleeping;              /* the worker waits in the kernel: wake it */
    unsigned first_seq;                /* seq when the worker was started */
} gk_mailbox;

/* The posted call's claim word: the call's number (high 32 bits), its span count (16 bits)
 * and the spans claimed so far (low 16 bits). One word, so that a worker still holding an
 * earlier call's value fails its compare-and-swap instead of claiming a span of a call that
 * is over. */
#define GK_SPANS(word) ((int)(((word) >> 16) & 0xffff))
#define GK_CLAIMED(word) ((int)((word) & 0xffff))

static struct {
    pthread_mutex_t lock; /* held by the call using the pool */
    int workers;          /* threads started */
    int forks_handled;    /* the fork handler is registered */
    gk_task task;         /* the posted call: task(ctx, k, n), read once a span is claimed */
    const void *ctx;
    _Alignas(64) _Atomic unsigned long long claim;
    _Alignas(64) _Atomic unsigned left; /* spans of the posted call not yet done */
    _Atomic int caller_sleeping;
    gk_mailbox box[GK_MAX_WORKERS];
} gk_pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static inline void gk_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline long long gk_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Sleep while *word == value (returns at once if it no longer is), and wake its sleepers. */
static void gk_sleep(_Atomic unsigned *word, unsigned value) {
#if defined(__linux__)
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
#else
    (void)word;
    (void)value;
    struct timespec nap = {0, 50000};
    nanosleep(&nap, NULL);
#endif
}

static void gk_wake(_Atomic unsigned *word) {
#if defined(__linux__)
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)word;
#endif
}

/* Wait until *word != value: spin for spin_ns (yielding the core every 256 pauses, to any
 * thread waiting for it), then sleep, announcing it in *sleeping
 * (the other side wakes a sleeper only; both sides' accesses are sequentially consistent,
 * so a change made as the waiter goes to sleep is either seen or woken). */
static unsigned gk_wait_change(_Atomic unsigned *word, unsigned value, _Atomic int *sleeping,
                               long long spin_ns) {
    unsigned now;
    long long until = 0;
    for (int i = 1;; ++i) {
        if ((now = atomic_load(word)) != value) return now;
        gk_relax();
        if ((i & 255) == 0) {
            sched_yield();
            long long t = gk_now_ns();
            if (until == 0) {
                until = t + spin_ns;
            } else if (t > until) {
                break;
            }
        }
    }
    for (;;) {
        atomic_store(sleeping, 1);
        if ((now = atomic_load(word)) != value) break;
        gk_sleep(word, value);
        if ((now = atomic_load(word)) != value) break;
    }
    atomic_store(sleeping, 0);
    return now;
}

/* A span of the posted call, or -1 when all of them are taken; *n: the call's span count. */
static int gk_claim(int *n) {
    unsigned long long word = atomic_load(&gk_pool.claim);
    for (;;) {
        if (GK_CLAIMED(word) >= GK_SPANS(word)) return -1;
        if (atomic_compare_exchange_weak(&gk_pool.claim, &word, word + 1)) {
            *n = GK_SPANS(word);
            return GK_CLAIMED(word);
        }
    }
}

/* Run spans of the posted call until none is left; whether this thread finished its last. */
static int gk_run_spans(void) {
    int k, n, last = 0;
    while ((k = gk_claim(&n)) >= 0) {
        gk_pool.task(gk_pool.ctx, k, n);
        last = atomic_fetch_sub(&gk_pool.left, 1) == 1;
    }
    return last;
}

static void *gk_worker(void *arg) {
    gk_mailbox *box = (gk_mailbox *)arg;
    unsigned seen = box->first_seq;
    for (;;) {
        seen = gk_wait_change(&box->seq, seen, &box->sleeping, GK_SPIN_NS);
        if (gk_run_spans() && atomic_load(&gk_pool.caller_sleeping)) gk_wake(&gk_pool.left);
    }
    return NULL;
}

/* In a forked child the workers do not exist (and the lock may be held by a thread that
 * does not either): start afresh. */
static void gk_pool_forget(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    gk_pool.lock = fresh;
    gk_pool.workers = 0;
}

/* Start workers up to `want` (the pool's lock held); the number running. */
static int gk_pool_grow(int want) {
    if (want > GK_MAX_WORKERS) want = GK_MAX_WORKERS;
    if (!gk_pool.forks_handled) gk_pool.forks_handled = !pthread_atfork(NULL, NULL, gk_pool_forget);
    while (gk_pool.workers < want) {
        gk_mailbox *box = &gk_pool.box[gk_pool.workers];
        pthread_attr_t attr;
        sigset_t all, old;
        pthread_t tid;
        box->first_seq = atomic_load(&box->seq);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        sigfillset(&all); /* signals go to Python's threads, never a worker */
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int failed = pthread_create(&tid, &attr, gk_worker, box);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (failed) break;
        ++gk_pool.workers;
    }
    return gk_pool.workers;
}

/* task(ctx, k, n) for k = 0 .. n - 1 (n = spans), on the calling thread and up to
 * threads - 1 of the pool's workers where the pool is free, else all of them here, in
 * order. */
static void gk_parallel(gk_task task, const void *ctx, int spans, int threads) {
    int n = spans;
    if (n <= 1 || threads <= 1 || pthread_mutex_trylock(&gk_pool.lock) != 0) {
        for (int k = 0; k < n; ++k) task(ctx, k, n);
        return;
    }
    if (n > GK_MAX_SPANS) n = GK_MAX_SPANS; /* fits the claim word */
    int helpers = gk_pool_grow((threads < n ? threads : n) - 1);
    unsigned long long call = (atomic_load(&gk_pool.claim) >> 32) + 1;
    gk_pool.task = task;
    gk_pool.ctx = ctx;
    atomic_store(&gk_pool.left, (unsigned)n);
    atomic_store(&gk_pool.claim, call << 32 | (unsigned long long)n << 16);
    for (int w = 0; w < helpers; ++w) {
        gk_mailbox *box = &gk_pool.box[w];
        atomic_fetch_add(&box->seq, 1);
        if (atomic_load(&box->sleeping)) gk_wake(&box->seq);
    }
    long long start = gk_now_ns();
    gk_run_spans();
    /* The spans left are running on workers, which finish about when this thread did:
     * spin as long as this thread's own spans took before sleeping, since a sleeping
     * caller is woken a scheduler's latency after the last span (tens of us on a VM) */
    long long spin = gk_now_ns() - start;
    unsigned left = atomic_load(&gk_pool.left);
    while (left != 0)
        left = gk_wait_change(&gk_pool.left, left, &gk_pool.caller_sleeping,
                              spin > GK_SPIN_NS ? spin : GK_SPIN_NS);
    pthread_mutex_unlock(&gk_pool.lock);
}

/* Spans for a pass over `units` (rows, columns or elements) on `threads` threads:
 * GK_SPANS_PER_THREAD a thread, so that a worker that starts late (woken from its sleep,
 * or kept off its core) costs only the spans the others take in its place, and the
 * threads finish within a span of each other. The same for the same thread count, so a
 * result that depends on where spans end (the backward's partial sums) does too. */
static inline int gk_spans(int threads, ptrdiff_t units) {
    long long want = threads <= 1 ? 1 : (long long)threads * GK_SPANS_PER_THREAD;
    if (want > GK_MAX_SPANS) want = GK_MAX_SPANS;
    return (int)(units < want ? (units < 1 ? 1 : units) : want);
}

/* The bounds of span k of n over [0, total): total k / n .. total (k + 1) / n. */
static inline ptrdiff_t gk_bound(ptrdiff_t total, int k, int n) {
    return total * k / n;
}
