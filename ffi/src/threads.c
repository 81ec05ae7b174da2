/*
 * Small pthread pools: a FIFO of tasks and detached worker threads started on first use.
 * Three pools, so that slow disk I/O and long jobs never starve memory copies:
 *   cpu  - memcpy work (threads = online CPUs, at most 16; SY_THREADS overrides)
 *   io   - pread/pwrite work (4 threads; SY_IO_THREADS overrides)
 *   job  - runs submitted transfers/broadcasts (8 threads)
 * sy_parallel_for lets the caller take items too, so it finishes even when every worker is
 * busy elsewhere: helpers that arrive late just find nothing left to do.
 */
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct task {
  void (*fn)(void*);
  void* arg;
  struct task* next;
};

struct sy_tpool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct task *head, *tail;
  int nthreads; /* target */
  int started;
};

static void* worker(void* arg) {
  struct sy_tpool* p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->head == NULL) pthread_cond_wait(&p->cv, &p->mu);
    struct task* t = p->head;
    p->head = t->next;
    if (p->head == NULL) p->tail = NULL;
    pthread_mutex_unlock(&p->mu);
    t->fn(t->arg);
    free(t);
  }
  return NULL;
}

/* Starts workers up to the target (called with p->mu held). Failing to start one is not an
   error: callers of sy_parallel_for do the work themselves, and jobs need only one thread. */
static void ensure_started(struct sy_tpool* p) {
  while (p->started < p->nthreads) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, worker, p);
    pthread_attr_destroy(&attr);
    if (rc != 0) break;
    p->started++;
  }
}

bool sy_tpool_submit(struct sy_tpool* p, void (*fn)(void*), void* arg) {
  struct task* t = malloc(sizeof *t);
  if (t == NULL) return false;
  t->fn = fn, t->arg = arg, t->next = NULL;
  pthread_mutex_lock(&p->mu);
  ensure_started(p);
  if (p->started == 0) { /* no thread could start: refuse rather than queue forever */
    pthread_mutex_unlock(&p->mu);
    free(t);
    return false;
  }
  if (p->tail) p->tail->next = t;
  else p->head = t;
  p->tail = t;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return true;
}

static int env_threads(const char* name, int fallback) {
  const char* v = getenv(name);
  if (v == NULL || *v == '\0') return fallback;
  char* end = NULL;
  long n = strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > 256) return fallback;
  return (int)n;
}

static struct sy_tpool cpu_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0};
static struct sy_tpool io_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0};
static struct sy_tpool job_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0};
static pthread_once_t sizes_once = PTHREAD_ONCE_INIT;

static void init_sizes(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) cpus = 1;
  if (cpus > 16) cpus = 16;
  cpu_pool.nthreads = env_threads("SY_THREADS", (int)cpus);
  io_pool.nthreads = env_threads("SY_IO_THREADS", 4);
  job_pool.nthreads = 8;
}

struct sy_tpool* sy_cpu_pool(void) {
  pthread_once(&sizes_once, init_sizes);
  return &cpu_pool;
}
struct sy_tpool* sy_io_pool(void) {
  pthread_once(&sizes_once, init_sizes);
  return &io_pool;
}
struct sy_tpool* sy_job_pool(void) {
  pthread_once(&sizes_once, init_sizes);
  return &job_pool;
}

/* ---- parallel for ------------------------------------------------------------------------ */

/* Shared by the caller and its helpers; freed by whoever drops the last reference, so a
   helper that starts after the caller returned still finds valid memory. */
struct pfor {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t n, next, done;
  int refs;
  void (*fn)(void*, size_t);
  void* ctx;
};

static void pfor_unref(struct pfor* f) {
  pthread_mutex_lock(&f->mu);
  int left = --f->refs;
  pthread_mutex_unlock(&f->mu);
  if (left == 0) {
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
  }
}

/* Claims and runs items until none are left. */
static void pfor_drain(struct pfor* f) {
  for (;;) {
    pthread_mutex_lock(&f->mu);
    if (f->next >= f->n) {
      pthread_mutex_unlock(&f->mu);
      return;
    }
    size_t i = f->next++;
    pthread_mutex_unlock(&f->mu);
    f->fn(f->ctx, i);
    pthread_mutex_lock(&f->mu);
    if (++f->done == f->n) pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
  }
}

static void pfor_helper(void* arg) {
  struct pfor* f = arg;
  pfor_drain(f);
  pfor_unref(f);
}

void sy_parallel_for(struct sy_tpool* p, size_t n, void (*fn)(void* ctx, size_t i), void* ctx) {
  if (n == 0) return;
  struct pfor* f = NULL;
  if (n > 1) f = calloc(1, sizeof *f);
  if (f == NULL) { /* one item, or no memory: do it all here */
    for (size_t i = 0; i < n; i++) fn(ctx, i);
    return;
  }
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  f->n = n, f->fn = fn, f->ctx = ctx, f->refs = 1;
  pthread_once(&sizes_once, init_sizes);
  /* The caller is one of the workers, so at most nthreads - 1 helpers. */
  size_t helpers = n - 1;
  if (helpers > (size_t)(p->nthreads - 1)) helpers = (size_t)(p->nthreads - 1);
  for (size_t h = 0; h < helpers; h++) {
    pthread_mutex_lock(&f->mu);
    f->refs++;
    pthread_mutex_unlock(&f->mu);
    if (!sy_tpool_submit(p, pfor_helper, f)) {
      pfor_unref(f);
      break;
    }
  }
  pfor_drain(f);
  pthread_mutex_lock(&f->mu);
  while (f->done < f->n) pthread_cond_wait(&f->cv, &f->mu);
  pthread_mutex_unlock(&f->mu);
  pfor_unref(f);
}
