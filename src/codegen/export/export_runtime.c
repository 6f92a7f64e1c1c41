/* The runtime of kernels exported by `tyche export`: the thread pool that runs their parallel
 * loops and the allocator of their large intermediate buffers. It needs only libc and POSIX
 * threads. Tyche compiles it into every exported library (and writes it beside exported C), so
 * every symbol is weak: several exported libraries linked into one program share one copy of
 * it. They are hidden too, so a shared library built from exported kernels keeps its copy (and
 * its pool) to itself.
 *
 * The pool works like Tyche's own (src/runtime/thread_pool.cc): workers spin briefly on a
 * generation counter before sleeping, so back-to-back parallel loops of one kernel call start in
 * microseconds; the caller takes a share; iterations go out in chunks (about four per thread)
 * from a shared counter. A parallel loop inside a running one runs serially. Threads are started
 * on the first parallel loop: TYCHE_NUM_THREADS, else the CPUs this process may run on, unless
 * <kernel>_set_num_threads(n) said otherwise. If a thread cannot be created, the pool makes do
 * with fewer. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TYCHE_PAUSE() _mm_pause()
#else
#define TYCHE_PAUSE() sched_yield()
#endif

#define TYCHE_RUNTIME __attribute__((weak, visibility("hidden")))

typedef int32_t (*tyche_parallel_body)(int64_t begin, int64_t end, void* env);

enum { kTycheMaxThreads = 256, kTycheSpin = 20000, kTycheCallerSpin = 2000 };
#define TYCHE_GATE_CLOSED ((uint64_t)1 << 31)

/* One state for the whole program (weak like the functions, so every copy's functions would
 * agree on it even if a linker mixed them). */
struct tyche_pool {
  pthread_mutex_t caller_mu; /* one parallel loop at a time when several host threads call in */
  pthread_mutex_t mu;        /* with cv: sleeping workers */
  pthread_cond_t cv;
  _Atomic uint64_t generation; /* (sequence << 16) | parts of the current loop */
  _Atomic int sleeping;
  /* (sequence << 32) | closed | workers joined: a worker joins before it reads the loop, the
   * caller closes the gate once every chunk is taken and waits only for those that joined, never
   * for a worker that wakes late or is not scheduled. */
  _Atomic uint64_t gate;
  _Atomic int finished;   /* joined workers done */
  _Atomic int64_t next;   /* the next iteration to hand out */
  _Atomic int32_t status; /* the first failing body's */
  tyche_parallel_body body;
  void* env;
  int64_t n, chunk;
  _Atomic int requested; /* threads asked for (0: the default), caller included */
  int threads;           /* threads running, caller included; 0: not started */
  int started_for;       /* the size asked when they were started (fewer if some failed) */
  int stop;
  pthread_t workers[kTycheMaxThreads];
};

TYCHE_RUNTIME struct tyche_pool tyche_rt1_pool = {.caller_mu = PTHREAD_MUTEX_INITIALIZER,
                                                  .mu = PTHREAD_MUTEX_INITIALIZER,
                                                  .cv = PTHREAD_COND_INITIALIZER};
TYCHE_RUNTIME __thread int tyche_rt1_in_parallel_loop;

static void tyche_run_part(struct tyche_pool* p) {
  tyche_rt1_in_parallel_loop = 1;
  while (atomic_load_explicit(&p->status, memory_order_relaxed) == 0) {
    int64_t begin = atomic_fetch_add_explicit(&p->next, p->chunk, memory_order_relaxed);
    if (begin >= p->n) break;
    int64_t end = begin + p->chunk < p->n ? begin + p->chunk : p->n;
    int32_t s = p->body(begin, end, p->env);
    if (s != 0) {
      int32_t none = 0;
      atomic_compare_exchange_strong_explicit(&p->status, &none, s, memory_order_relaxed,
                                              memory_order_relaxed);
    }
  }
  tyche_rt1_in_parallel_loop = 0;
}

/* Takes part in loop `sequence` unless it is over (or the gate closed on it). */
static int tyche_join(struct tyche_pool* p, uint64_t sequence) {
  uint64_t g = atomic_load_explicit(&p->gate, memory_order_acquire);
  while ((g >> 32) == (sequence & 0xffffffffu) && (g & TYCHE_GATE_CLOSED) == 0)
    if (atomic_compare_exchange_weak_explicit(&p->gate, &g, g + 1, memory_order_acq_rel,
                                              memory_order_acquire))
      return 1;
  return 0;
}

struct tyche_worker_start {
  int index;
  uint64_t seen;
};

static void* tyche_worker(void* arg) {
  struct tyche_pool* p = &tyche_rt1_pool;
  struct tyche_worker_start start = *(struct tyche_worker_start*)arg;
  free(arg);
  uint64_t seen = start.seen;
  for (;;) {
    uint64_t g = atomic_load_explicit(&p->generation, memory_order_acquire);
    for (int spin = 0; g == seen && spin < kTycheSpin; ++spin) {
      TYCHE_PAUSE();
      g = atomic_load_explicit(&p->generation, memory_order_acquire);
    }
    if (g == seen) {
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleeping, 1);
      while (!p->stop && atomic_load(&p->generation) == seen) pthread_cond_wait(&p->cv, &p->mu);
      atomic_fetch_sub(&p->sleeping, 1);
      int stop = p->stop;
      pthread_mutex_unlock(&p->mu);
      if (stop) return NULL;
      g = atomic_load_explicit(&p->generation, memory_order_acquire);
    }
    seen = g;
    int parts = (int)(g & 0xffff);
    if (start.index + 1 < parts && tyche_join(p, g >> 16)) { /* part 0 is the caller's */
      tyche_run_part(p);
      atomic_fetch_add_explicit(&p->finished, 1, memory_order_acq_rel);
    }
  }
}

static int tyche_default_threads(void) {
  const char* env = getenv("TYCHE_NUM_THREADS");
  if (env && atoi(env) > 0) return atoi(env);
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* The size asked for (n < 1: the default), clamped. */
static int tyche_wanted_threads(int n) {
  int want = n > 0 ? n : tyche_default_threads();
  return want < kTycheMaxThreads ? want : kTycheMaxThreads;
}

/* Both under caller_mu. */
static void tyche_stop_workers(struct tyche_pool* p) {
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i + 1 < p->threads; ++i) pthread_join(p->workers[i], NULL);
  p->stop = 0;
  p->threads = 0;
}

static void tyche_start_workers(struct tyche_pool* p) {
  int want = tyche_wanted_threads(atomic_load(&p->requested));
  /* New workers must not mistake the last loop (of earlier workers) for a new one. */
  uint64_t current = atomic_load_explicit(&p->generation, memory_order_acquire);
  int started = 1;
  for (int i = 0; i + 1 < want; ++i) {
    struct tyche_worker_start* s = malloc(sizeof *s);
    if (!s) break;
    s->index = i;
    s->seen = current;
    if (pthread_create(&p->workers[i], NULL, tyche_worker, s) != 0) {
      free(s);
      break;
    }
    ++started;
  }
  p->threads = started;
  p->started_for = want;
}

/* A child of fork() has none of the workers: it starts its own, with fresh locks. */
static void tyche_after_fork_in_child(void) {
  struct tyche_pool* p = &tyche_rt1_pool;
  pthread_mutex_init(&p->caller_mu, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  atomic_store(&p->sleeping, 0);
  p->threads = 0;
  p->stop = 0;
}

/* Workers run this code: they are stopped before it goes away (the library unloaded, the
 * program exiting), unless another thread is inside a parallel loop then. */
static void tyche_forget_blocks_key(void);
__attribute__((destructor)) static void tyche_runtime_unload(void) {
  struct tyche_pool* p = &tyche_rt1_pool;
  tyche_forget_blocks_key();
  if (pthread_mutex_trylock(&p->caller_mu) != 0) return;
  if (p->threads != 0) tyche_stop_workers(p);
  pthread_mutex_unlock(&p->caller_mu);
}

TYCHE_RUNTIME pthread_once_t tyche_rt1_fork_once = PTHREAD_ONCE_INIT;
static void tyche_register_fork_handler(void) {
  pthread_atfork(NULL, NULL, tyche_after_fork_in_child);
}

TYCHE_RUNTIME void tyche_rt1_set_num_threads(int n) {
  struct tyche_pool* p = &tyche_rt1_pool;
  pthread_mutex_lock(&p->caller_mu);
  atomic_store(&p->requested, n > 0 ? tyche_wanted_threads(n) : 0);
  /* Restarted, at the size asked, by the next loop. */
  if (p->threads != 0 && p->started_for != tyche_wanted_threads(atomic_load(&p->requested)))
    tyche_stop_workers(p);
  pthread_mutex_unlock(&p->caller_mu);
}

TYCHE_RUNTIME int32_t tyche_rt1_parallel_for(int64_t n, tyche_parallel_body body, void* env) {
  struct tyche_pool* p = &tyche_rt1_pool;
  if (n <= 0) return 0;
  if (tyche_rt1_in_parallel_loop || n == 1 ||
      atomic_load_explicit(&p->requested, memory_order_relaxed) == 1)
    return body(0, n, env);
  pthread_mutex_lock(&p->caller_mu);
  if (p->threads == 0) {
    pthread_once(&tyche_rt1_fork_once, tyche_register_fork_handler);
    tyche_start_workers(p);
  }
  int64_t parts = n < p->threads ? n : p->threads;
  if (parts > 0xffff) parts = 0xffff;
  if (parts <= 1) {
    pthread_mutex_unlock(&p->caller_mu);
    return body(0, n, env);
  }
  p->body = body;
  p->env = env;
  p->n = n;
  p->chunk = n / (parts * 4) > 1 ? n / (parts * 4) : 1;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->status, 0, memory_order_relaxed);
  atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
  uint64_t sequence = (atomic_load_explicit(&p->generation, memory_order_relaxed) >> 16) + 1;
  atomic_store_explicit(&p->gate, (sequence & 0xffffffffu) << 32,
                        memory_order_relaxed); /* published with the generation */
  uint64_t next = sequence << 16 | (uint64_t)parts;
  /* Publishing the loop and checking for sleepers must not be reordered (a Dekker pattern with
   * the workers' sleeping increment, then generation check): both sequentially consistent. */
  atomic_store(&p->generation, next);
  if (atomic_load(&p->sleeping) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
  tyche_run_part(p);
  int joined = (int)(atomic_fetch_or_explicit(&p->gate, TYCHE_GATE_CLOSED, memory_order_acq_rel) &
                     (TYCHE_GATE_CLOSED - 1));
  for (int spin = 0; atomic_load_explicit(&p->finished, memory_order_acquire) < joined; ++spin) {
    if (spin < kTycheCallerSpin)
      TYCHE_PAUSE();
    else
      sched_yield(); /* a joined worker preempted on our CPU gets it back */
  }
  int32_t status = atomic_load_explicit(&p->status, memory_order_relaxed);
  pthread_mutex_unlock(&p->caller_mu);
  return status;
}

/* Large intermediates are allocated and freed once per iteration of some loop (or call); a small
 * cache of freed blocks per thread keeps that from becoming an mmap and page faults each time.
 * Each block carries its size in a 64-byte header. A full cache drops its least recently freed
 * block, so that a program running many kernels keeps those of the kernel running now. */
enum { kTycheHeader = 64, kTycheCachedBlocks = 16 };
#define TYCHE_MAX_CACHED_BYTES ((size_t)1 << 30)
struct tyche_block_cache {
  int count;
  void* blocks[kTycheCachedBlocks];
};
TYCHE_RUNTIME __thread struct tyche_block_cache tyche_rt1_blocks;
TYCHE_RUNTIME pthread_key_t tyche_rt1_blocks_key;
TYCHE_RUNTIME pthread_once_t tyche_rt1_blocks_once = PTHREAD_ONCE_INIT;

static void tyche_free_cached(void* cache) {
  struct tyche_block_cache* c = cache;
  for (int i = 0; i < c->count; ++i) free(c->blocks[i]);
  c->count = 0;
}

TYCHE_RUNTIME int tyche_rt1_blocks_key_made;
static void tyche_make_blocks_key(void) {
  tyche_rt1_blocks_key_made = pthread_key_create(&tyche_rt1_blocks_key, tyche_free_cached) == 0;
}
/* No thread may call into this code at its exit once it is unloaded. */
static void tyche_forget_blocks_key(void) {
  if (tyche_rt1_blocks_key_made) pthread_key_delete(tyche_rt1_blocks_key);
  tyche_rt1_blocks_key_made = 0;
}

/* AMX's tile registers, asked of the OS once per process (Linux keeps their state off until then).
 */
TYCHE_RUNTIME int32_t tyche_rt1_request_tiles(void) {
#if defined(__linux__) && defined(__x86_64__)
  static atomic_int state; /* 0 unknown, 1 granted, 2 refused */
  int s = atomic_load(&state);
  if (s == 0) {
    s = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0
            ? 1
            : 2;
    atomic_store(&state, s);
  }
  return s == 1 ? 0 : 1;
#else
  return 1;
#endif
}

TYCHE_RUNTIME void* tyche_rt1_alloc(int64_t bytes) {
  if (bytes < 1) bytes = 1;
  if ((uint64_t)bytes > (UINT64_MAX >> 2)) return NULL;
  size_t size = ((size_t)bytes + 63) / 64 * 64;
  struct tyche_block_cache* c = &tyche_rt1_blocks;
  for (int i = 0; i < c->count; ++i) {
    if (*(size_t*)c->blocks[i] != size) continue;
    void* base = c->blocks[i];
    memmove(&c->blocks[i], &c->blocks[i + 1], (size_t)(c->count - i - 1) * sizeof(void*));
    --c->count;
    return (char*)base + kTycheHeader;
  }
  void* base = aligned_alloc(64, size + kTycheHeader);
  if (!base) return NULL;
  *(size_t*)base = size;
  return (char*)base + kTycheHeader;
}

TYCHE_RUNTIME void tyche_rt1_free(void* ptr) {
  if (!ptr) return;
  void* base = (char*)ptr - kTycheHeader;
  struct tyche_block_cache* c = &tyche_rt1_blocks;
  size_t size = *(size_t*)base, cached = size;
  if (size > TYCHE_MAX_CACHED_BYTES) {
    free(base);
    return;
  }
  for (int i = 0; i < c->count; ++i) cached += *(size_t*)c->blocks[i];
  while (c->count > 0 && (c->count >= kTycheCachedBlocks || cached > TYCHE_MAX_CACHED_BYTES)) {
    cached -= *(size_t*)c->blocks[0];
    free(c->blocks[0]);
    memmove(&c->blocks[0], &c->blocks[1], (size_t)(c->count - 1) * sizeof(void*));
    --c->count;
  }
  /* A thread that caches a block frees its cache when it exits. */
  pthread_once(&tyche_rt1_blocks_once, tyche_make_blocks_key);
  if (c->count == 0 && tyche_rt1_blocks_key_made) pthread_setspecific(tyche_rt1_blocks_key, c);
  c->blocks[c->count++] = base;
}
