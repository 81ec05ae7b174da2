/*
 * Replication groups (seed 003 replicated mode): after rank 0 loads blocks into its device
 * pool, every rank receives the same bytes into the same block indices.
 *
 * Two transports:
 *   - NCCL (ncclBcast inside ncclGroupStart/End, root 0, on a stream, completion by event)
 *     when rank 0 finds NCCL and a GPU usable and the pool is a CUDA device pool;
 *   - otherwise a CPU collective over POSIX shared memory between processes on one host.
 *
 * Shared-memory protocol. Rank 0 creates the segment (O_EXCL, so a stale name fails loudly),
 * the others open it once it carries the magic number, everyone marks itself joined, and rank
 * 0 unlinks the name once all have joined (the mappings stay). A broadcast streams the blocks
 * through a data window in rounds: rank 0 waits until every rank has acknowledged the previous
 * round, fills the window, describes it (op id, total bytes, offset) and bumps `seq`; every
 * other rank waits for `seq`, checks the description against its own request, copies out and
 * acknowledges. No locks are shared, so a dead peer cannot leave one held: waits end at the
 * group's timeout, and a rank that sees a mismatch sets `aborted`, which fails every rank.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAGIC 0x53594731u /* "SYG1" */
#define MAX_WORLD 64
#define DATA_BYTES (8u << 20)
#define DEFAULT_TIMEOUT_MS 30000
#define NAME_MAX_BYTES 100

struct shm_hdr {
  _Atomic uint32_t magic;
  uint32_t world;
  _Atomic uint32_t aborted;
  _Atomic uint32_t use_nccl; /* decided by rank 0 */
  _Atomic uint32_t nccl_id_ready;
  _Atomic uint32_t joined[MAX_WORLD];
  _Atomic uint64_t barrier_arrivals;
  _Atomic uint64_t seq;            /* rounds published by rank 0 */
  _Atomic uint64_t ack[MAX_WORLD]; /* last round each rank consumed */
  uint64_t op_id, op_total, round_off, round_len; /* written by rank 0 before bumping seq */
  sy_nccl_id nccl_id;
  _Alignas(64) uint8_t data[];
};

struct sy_group {
  struct sy_obj obj;
  pthread_mutex_t op_mu; /* collectives on one group run one at a time, in call order */
  int rank, world;
  uint64_t timeout_ns;
  struct shm_hdr* hdr;
  size_t map_bytes;
  uint64_t seq, ops, barriers; /* this rank's view of the protocol counters */
  bool nccl;
  sy_nccl_comm comm;
};

/* ---- waiting ----------------------------------------------------------------------------- */

struct waiter {
  uint64_t deadline;
  unsigned spins;
};

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Spins briefly, then yields, then sleeps 50 us: ranks may outnumber cores. */
static void pause_once(struct waiter* w) {
  if (w->spins < 64) {
    w->spins++;
    cpu_relax();
  } else if (w->spins < 256) {
    w->spins++;
    sched_yield();
  } else {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
}

/* SY_OK to keep waiting, or the failure (timeout / aborted) to return. */
static int32_t wait_step(struct sy_group* g, struct waiter* w, const char* what) {
  if (atomic_load_explicit(&g->hdr->aborted, memory_order_acquire))
    return sy_fail(SY_E_COLLECTIVE, "rank %d: group aborted by another rank while %s", g->rank, what);
  if (sy_now_ns() > w->deadline) {
    atomic_store_explicit(&g->hdr->aborted, 1, memory_order_release);
    return sy_fail(SY_E_TIMEOUT, "rank %d: timed out after %llu ms %s", g->rank, (unsigned long long)(g->timeout_ns / 1000000u), what);
  }
  pause_once(w);
  return SY_OK;
}

/* An aborted group fails every later collective on every rank. */
static int32_t check_not_aborted(struct sy_group* g) {
  if (!atomic_load_explicit(&g->hdr->aborted, memory_order_acquire)) return SY_OK;
  return sy_fail(SY_E_COLLECTIVE, "rank %d: the group was aborted (a rank timed out or the ranks' requests differed)", g->rank);
}

static struct waiter waiter_for(const struct sy_group* g) { return (struct waiter){sy_now_ns() + g->timeout_ns, 0}; }

/* ---- lifecycle --------------------------------------------------------------------------- */

static void group_free(struct sy_obj* obj) {
  struct sy_group* g = (struct sy_group*)obj;
  if (g->nccl && g->comm) sy_rt()->nccl.CommDestroy(g->comm);
  if (g->hdr) munmap(g->hdr, g->map_bytes);
  pthread_mutex_destroy(&g->op_mu);
  free(g);
}

static bool name_ok(const char* s, size_t n) {
  if (s == NULL || n == 0 || n > NAME_MAX_BYTES) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

static int32_t map_segment(struct sy_group* g, int fd) {
  void* m = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return sy_fail(SY_E_IO, "cannot map the group segment: %s", strerror(errno));
  g->hdr = m;
  return SY_OK;
}

/* Rank 0: create, size and initialise the segment. */
static int32_t create_segment(struct sy_group* g, const char* shm_name, uint32_t flags) {
  int fd = shm_open(shm_name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) return sy_fail(SY_E_COLLECTIVE, "group %s already exists (a stale group, or two rank 0s)", shm_name + 1);
  if (fd < 0) return sy_fail(SY_E_IO, "shm_open %s: %s", shm_name, strerror(errno));
  int32_t st = ftruncate(fd, (off_t)g->map_bytes) == 0 ? SY_OK : sy_fail(SY_E_IO, "sizing the group segment: %s", strerror(errno));
  if (st == SY_OK) st = map_segment(g, fd);
  close(fd);
  if (st != SY_OK) {
    shm_unlink(shm_name);
    return st;
  }
  g->hdr->world = (uint32_t)g->world; /* the segment starts zeroed: every counter is 0 */
  const struct sy_runtime* rt = sy_rt();
  bool nccl = (rt->caps & SY_CAP_NCCL) && (rt->caps & SY_CAP_GPU) && !(flags & SY_GROUP_CPU_ONLY);
  atomic_store_explicit(&g->hdr->use_nccl, nccl, memory_order_relaxed);
  atomic_store_explicit(&g->hdr->magic, MAGIC, memory_order_release);
  return SY_OK;
}

/* Other ranks: wait for rank 0's segment to exist, be sized and carry the magic number. */
static int32_t open_segment(struct sy_group* g, const char* shm_name) {
  struct waiter w = waiter_for(g);
  for (;;) {
    int fd = shm_open(shm_name, O_RDWR, 0600);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && (size_t)st.st_size >= g->map_bytes) {
        int32_t rc = map_segment(g, fd);
        close(fd);
        if (rc != SY_OK) return rc;
        break;
      }
      close(fd);
    } else if (errno != ENOENT) {
      return sy_fail(SY_E_IO, "shm_open %s: %s", shm_name, strerror(errno));
    }
    if (sy_now_ns() > w.deadline) return sy_fail(SY_E_TIMEOUT, "rank %d: rank 0 did not create group %s in time", g->rank, shm_name + 1);
    pause_once(&w);
  }
  while (atomic_load_explicit(&g->hdr->magic, memory_order_acquire) != MAGIC) {
    if (sy_now_ns() > w.deadline) return sy_fail(SY_E_TIMEOUT, "rank %d: group %s was never initialised", g->rank, shm_name + 1);
    pause_once(&w);
  }
  if (g->hdr->world != (uint32_t)g->world)
    return sy_fail(SY_E_COLLECTIVE, "rank %d says world %d but rank 0 created the group for %u", g->rank, g->world, g->hdr->world);
  return SY_OK;
}

static int32_t join_all(struct sy_group* g) {
  if (atomic_exchange(&g->hdr->joined[g->rank], 1) != 0) {
    atomic_store(&g->hdr->aborted, 1);
    return sy_fail(SY_E_COLLECTIVE, "rank %d joined the group twice", g->rank);
  }
  struct waiter w = waiter_for(g);
  for (int r = 0; r < g->world; r++)
    while (!atomic_load_explicit(&g->hdr->joined[r], memory_order_acquire)) {
      int32_t st = wait_step(g, &w, "waiting for every rank to join");
      if (st != SY_OK) return st;
    }
  return SY_OK;
}

/* Rank 0 publishes an NCCL unique id through the segment; everyone then inits the comm. */
static int32_t init_nccl(struct sy_group* g) {
  const struct sy_runtime* rt = sy_rt();
  if (!(rt->caps & SY_CAP_NCCL) || !(rt->caps & SY_CAP_GPU))
    return sy_fail(SY_E_UNAVAILABLE, "rank 0 chose NCCL but rank %d cannot use it: %s", g->rank, rt->status);
  int32_t st = SY_OK;
  if (g->rank == 0) {
    st = sy_nccl_check(rt->nccl.GetUniqueId(&g->hdr->nccl_id), "ncclGetUniqueId");
    if (st != SY_OK) {
      atomic_store(&g->hdr->aborted, 1);
      return st;
    }
    atomic_store_explicit(&g->hdr->nccl_id_ready, 1, memory_order_release);
  } else {
    struct waiter w = waiter_for(g);
    while (!atomic_load_explicit(&g->hdr->nccl_id_ready, memory_order_acquire))
      if ((st = wait_step(g, &w, "waiting for the NCCL id")) != SY_OK) return st;
  }
  if ((st = sy_cuda_check(rt->cuda.SetDevice(rt->device), "cudaSetDevice")) != SY_OK) return st;
  st = sy_nccl_check(rt->nccl.CommInitRank(&g->comm, g->world, g->hdr->nccl_id, g->rank), "ncclCommInitRank");
  if (st == SY_OK) g->nccl = true;
  return st;
}

int32_t sy_group_create(const char* name, size_t name_len, int32_t rank, int32_t world, int64_t timeout_ms, uint32_t flags) {
  sy_clear_error();
  if (!name_ok(name, name_len)) return sy_fail(SY_E_INVALID, "group name must be 1..%d bytes of [A-Za-z0-9._-]", NAME_MAX_BYTES);
  if (world < 1 || world > MAX_WORLD) return sy_fail(SY_E_INVALID, "world size %d is outside 1..%d", world, MAX_WORLD);
  if (rank < 0 || rank >= world) return sy_fail(SY_E_INVALID, "rank %d violates 0 <= rank < world (%d)", rank, world);
  if (timeout_ms < 0 || timeout_ms > 86400000) return sy_fail(SY_E_INVALID, "timeout %lld ms is outside 0..86400000", (long long)timeout_ms);
  if (flags & ~SY_GROUP_CPU_ONLY) return sy_fail(SY_E_INVALID, "unknown group flags 0x%x", flags);

  char shm_name[NAME_MAX_BYTES + 8];
  snprintf(shm_name, sizeof shm_name, "/sy-%.*s", (int)name_len, name);
  struct sy_group* g = calloc(1, sizeof *g);
  if (g == NULL) return sy_fail(SY_E_NOMEM, "out of memory");
  g->obj.type = SY_OBJ_GROUP;
  g->obj.free_fn = group_free;
  atomic_init(&g->obj.refs, 1);
  pthread_mutex_init(&g->op_mu, NULL);
  g->rank = rank, g->world = world;
  g->timeout_ns = (uint64_t)(timeout_ms ? timeout_ms : DEFAULT_TIMEOUT_MS) * 1000000u;
  g->map_bytes = sizeof(struct shm_hdr) + DATA_BYTES;

  int32_t st = rank == 0 ? create_segment(g, shm_name, flags) : open_segment(g, shm_name);
  if (st == SY_OK) st = join_all(g);
  if (rank == 0 && g->hdr != NULL) shm_unlink(shm_name); /* everyone has mapped it, or failed */
  /* Rank 0 decides the transport for everyone. */
  bool nccl = st == SY_OK && atomic_load(&g->hdr->use_nccl);
  if (nccl && (flags & SY_GROUP_CPU_ONLY)) {
    atomic_store(&g->hdr->aborted, 1);
    st = sy_fail(SY_E_COLLECTIVE, "rank 0 chose NCCL but rank %d asked for the CPU collective only", rank);
  }
  if (st == SY_OK && nccl) st = init_nccl(g);
  if (st != SY_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sy_error_text());
    group_free(&g->obj);
    sy_set_error_text(msg);
    return st;
  }
  int32_t h = sy_handle_insert(&g->obj);
  if (h < 0) group_free(&g->obj);
  return h;
}

int32_t sy_group_destroy(int32_t group) {
  sy_clear_error();
  return sy_handle_remove(group, SY_OBJ_GROUP);
}

struct sy_group* sy_group_acquire(int32_t handle) { return (struct sy_group*)sy_handle_acquire(handle, SY_OBJ_GROUP); }

int32_t sy_group_uses_nccl(int32_t group) {
  sy_clear_error();
  struct sy_group* g = sy_group_acquire(group);
  if (g == NULL) return SY_E_HANDLE;
  int32_t r = g->nccl ? 1 : 0;
  sy_obj_release(&g->obj);
  return r;
}

int32_t sy_group_barrier(int32_t group) {
  sy_clear_error();
  struct sy_group* g = sy_group_acquire(group);
  if (g == NULL) return SY_E_HANDLE;
  pthread_mutex_lock(&g->op_mu);
  uint64_t target = (++g->barriers) * (uint64_t)g->world;
  atomic_fetch_add_explicit(&g->hdr->barrier_arrivals, 1, memory_order_acq_rel);
  struct waiter w = waiter_for(g);
  int32_t st = SY_OK;
  while (st == SY_OK && atomic_load_explicit(&g->hdr->barrier_arrivals, memory_order_acquire) < target)
    st = wait_step(g, &w, "waiting at a barrier");
  if (st == SY_OK) st = check_not_aborted(g);
  pthread_mutex_unlock(&g->op_mu);
  sy_obj_release(&g->obj);
  return st;
}

/* ---- broadcast over shared memory ------------------------------------------------------------ */

/* Walks the bytes of the listed blocks in order: whole blocks when contiguous, else chunks. */
struct cursor {
  const struct sy_pool* pool;
  const uint32_t* idx;
  size_t n, i;
  uint32_t chunk; /* chunk index within the block (layer * outer + outer) */
  uint64_t off;   /* offset within the current segment */
};

static uint64_t seg_len(const struct cursor* c) {
  return sy_block_contiguous(c->pool) ? c->pool->g.block_bytes : c->pool->g.chunk_bytes;
}

static uint8_t* seg_ptr(const struct cursor* c) {
  uint32_t outer = c->pool->g.outer;
  if (sy_block_contiguous(c->pool)) return sy_chunk_ptr(c->pool, c->idx[c->i], 0, 0);
  return sy_chunk_ptr(c->pool, c->idx[c->i], c->chunk / outer, c->chunk % outer);
}

static void advance(struct cursor* c, uint64_t n) {
  c->off += n;
  if (c->off < seg_len(c)) return;
  c->off = 0;
  uint32_t chunks = sy_block_contiguous(c->pool) ? 1 : c->pool->g.layers * c->pool->g.outer;
  if (++c->chunk == chunks) c->chunk = 0, c->i++;
}

/* Moves up to `room` bytes between the window and the blocks (to_window: rank 0's side). */
static int32_t move_round(struct cursor* c, uint8_t* window, uint64_t room, bool to_window) {
  const struct sy_runtime* rt = sy_rt();
  bool cuda = sy_is_cuda_device(c->pool);
  uint64_t done = 0;
  while (done < room && c->i < c->n) {
    uint64_t n = seg_len(c) - c->off;
    if (n > room - done) n = room - done;
    uint8_t* p = seg_ptr(c) + c->off;
    if (cuda) {
      int32_t st = to_window ? sy_cuda_check(rt->cuda.Memcpy(window + done, p, n, SY_CUDA_MEMCPY_D2H), "cudaMemcpy")
                             : sy_cuda_check(rt->cuda.Memcpy(p, window + done, n, SY_CUDA_MEMCPY_H2D), "cudaMemcpy");
      if (st != SY_OK) return st;
    } else if (to_window) {
      memcpy(window + done, p, n);
    } else {
      memcpy(p, window + done, n);
    }
    done += n;
    advance(c, n);
  }
  return SY_OK;
}

static int32_t shm_bcast(struct sy_group* g, const struct sy_pool* pool, const uint32_t* idx, size_t n) {
  struct shm_hdr* h = g->hdr;
  if (pool->backend == SY_BACKEND_CUDA && sy_cuda_check(sy_rt()->cuda.SetDevice(sy_rt()->device), "cudaSetDevice") != SY_OK) {
    atomic_store(&h->aborted, 1); /* the others would wait for this rank in vain */
    return SY_E_CUDA;
  }
  uint64_t op = ++g->ops;
  uint64_t total = (uint64_t)n * pool->g.block_bytes;
  struct cursor c = {pool, idx, n, 0, 0, 0};
  uint64_t pos = 0;
  int32_t st = SY_OK;
  /* An empty broadcast still takes one (empty) round, so the ranks stay in step. */
  do {
    struct waiter w = waiter_for(g);
    if (g->rank == 0) {
      for (int r = 1; r < g->world && st == SY_OK; r++)
        while (st == SY_OK && atomic_load_explicit(&h->ack[r], memory_order_acquire) < g->seq)
          st = wait_step(g, &w, "waiting for ranks to take the previous round");
      if (st != SY_OK) break;
      uint64_t len = total - pos < DATA_BYTES ? total - pos : DATA_BYTES;
      if ((st = move_round(&c, h->data, len, true)) != SY_OK) break;
      h->op_id = op, h->op_total = total, h->round_off = pos, h->round_len = len;
      atomic_store_explicit(&h->seq, ++g->seq, memory_order_release);
      pos += len;
    } else {
      while (st == SY_OK && atomic_load_explicit(&h->seq, memory_order_acquire) <= g->seq)
        st = wait_step(g, &w, "waiting for rank 0's data");
      if (st != SY_OK) break;
      if (h->op_id != op || h->op_total != total || h->round_off != pos) {
        atomic_store(&h->aborted, 1);
        st = sy_fail(SY_E_COLLECTIVE, "rank %d expected broadcast #%llu of %llu bytes at %llu, rank 0 sent #%llu of %llu bytes at %llu",
                     g->rank, (unsigned long long)op, (unsigned long long)total, (unsigned long long)pos,
                     (unsigned long long)h->op_id, (unsigned long long)h->op_total, (unsigned long long)h->round_off);
        break;
      }
      uint64_t len = h->round_len;
      if ((st = move_round(&c, h->data, len, false)) != SY_OK) break;
      atomic_store_explicit(&h->ack[g->rank], ++g->seq, memory_order_release);
      pos += len;
    }
  } while (pos < total);
  /* A rank that fails mid-broadcast leaves the others out of step: fail them all now rather
     than at their timeout. */
  if (st != SY_OK) atomic_store(&h->aborted, 1);
  return st;
}

static int32_t nccl_bcast(struct sy_group* g, const struct sy_pool* pool, const uint32_t* idx, size_t n) {
  const struct sy_runtime* rt = sy_rt();
  int32_t st = sy_cuda_check(rt->cuda.SetDevice(rt->device), "cudaSetDevice");
  sy_cuda_stream s = NULL;
  sy_cuda_event ev = NULL;
  if (st == SY_OK) st = sy_cuda_check(rt->cuda.StreamCreateWithFlags(&s, 1), "cudaStreamCreateWithFlags");
  if (st == SY_OK) st = sy_nccl_check(rt->nccl.GroupStart(), "ncclGroupStart");
  if (st == SY_OK) {
    struct cursor c = {pool, idx, n, 0, 0, 0};
    while (st == SY_OK && c.i < c.n) {
      uint64_t len = seg_len(&c);
      st = sy_nccl_check(rt->nccl.Bcast(seg_ptr(&c), len, 0 /* ncclChar */, 0, g->comm, s), "ncclBcast");
      advance(&c, len);
    }
    int32_t end = sy_nccl_check(rt->nccl.GroupEnd(), "ncclGroupEnd");
    if (st == SY_OK) st = end;
  }
  if (s != NULL) {
    int32_t ev_st = sy_cuda_check(rt->cuda.EventCreateWithFlags(&ev, 2), "cudaEventCreateWithFlags");
    if (ev_st == SY_OK) ev_st = sy_cuda_check(rt->cuda.EventRecord(ev, s), "cudaEventRecord");
    if (ev_st == SY_OK) ev_st = sy_cuda_check(rt->cuda.EventSynchronize(ev), "cudaEventSynchronize");
    if (ev != NULL) rt->cuda.EventDestroy(ev);
    rt->cuda.StreamDestroy(s);
    if (st == SY_OK) st = ev_st;
  }
  return st;
}

int32_t sy_group_run_bcast(struct sy_group* g, const struct sy_pool* pool, const uint32_t* idx, size_t n) {
  pthread_mutex_lock(&g->op_mu);
  int32_t st = check_not_aborted(g);
  if (st == SY_OK) st = (g->nccl && sy_is_cuda_device(pool)) ? nccl_bcast(g, pool, idx, n) : shm_bcast(g, pool, idx, n);
  pthread_mutex_unlock(&g->op_mu);
  return st;
}

/* ---- ABI entry points --------------------------------------------------------------------- */

static int32_t open_bcast(int32_t group, int32_t pool, const uint32_t* indices, size_t indices_bytes, struct sy_group** g,
                          struct sy_pool** p) {
  *g = NULL, *p = NULL;
  if (indices_bytes % sizeof(uint32_t) != 0) return sy_fail(SY_E_INVALID, "indices is %zu bytes, not a whole number of uint32", indices_bytes);
  if (indices_bytes > 0 && indices == NULL) return sy_fail(SY_E_INVALID, "indices is NULL");
  if ((*g = sy_group_acquire(group)) == NULL) return SY_E_HANDLE;
  if ((*p = sy_pool_acquire(pool)) == NULL) {
    sy_obj_release(&(*g)->obj);
    *g = NULL;
    return SY_E_HANDLE;
  }
  int32_t st = SY_OK;
  size_t n = indices_bytes / sizeof(uint32_t);
  if ((*p)->kind == SY_POOL_DISK) st = sy_fail(SY_E_INVALID, "broadcast needs a memory pool, not a disk pool");
  else if ((*p)->read_only) st = sy_fail(SY_E_READ_ONLY, "broadcast cannot write into a read-only shared-memory pool");
  for (size_t i = 0; st == SY_OK && i < n; i++)
    if (indices[i] >= (*p)->num_blocks)
      st = sy_fail(SY_E_RANGE, "index %zu: block %u is outside the pool (%llu blocks)", i, indices[i], (unsigned long long)(*p)->num_blocks);
  if (st != SY_OK) {
    sy_obj_release(&(*g)->obj);
    sy_obj_release(&(*p)->obj);
    *g = NULL, *p = NULL;
  }
  return st;
}

int32_t sy_group_bcast(int32_t group, int32_t pool, const uint32_t* indices, size_t indices_bytes) {
  sy_clear_error();
  struct sy_group* g;
  struct sy_pool* p;
  int32_t st = open_bcast(group, pool, indices, indices_bytes, &g, &p);
  if (st != SY_OK) return st;
  st = sy_group_run_bcast(g, p, indices, indices_bytes / sizeof(uint32_t));
  sy_obj_release(&g->obj);
  sy_obj_release(&p->obj);
  return st;
}

struct bcast_job {
  struct sy_group* g;
  struct sy_pool* p;
  uint32_t* idx;
  size_t n;
};

static int32_t bcast_job_run(void* ctx) {
  struct bcast_job* j = ctx;
  return sy_group_run_bcast(j->g, j->p, j->idx, j->n);
}

static void bcast_job_done(void* ctx) {
  struct bcast_job* j = ctx;
  sy_obj_release(&j->g->obj);
  sy_obj_release(&j->p->obj);
  free(j->idx);
  free(j);
}

int32_t sy_group_bcast_submit(int32_t group, int32_t pool, const uint32_t* indices, size_t indices_bytes) {
  sy_clear_error();
  struct sy_group* g;
  struct sy_pool* p;
  int32_t st = open_bcast(group, pool, indices, indices_bytes, &g, &p);
  if (st != SY_OK) return st;
  struct bcast_job* j = calloc(1, sizeof *j);
  if (j != NULL && indices_bytes > 0) j->idx = malloc(indices_bytes);
  if (j == NULL || (indices_bytes > 0 && j->idx == NULL)) {
    free(j);
    sy_obj_release(&g->obj);
    sy_obj_release(&p->obj);
    return sy_fail(SY_E_NOMEM, "out of memory");
  }
  if (indices_bytes > 0) memcpy(j->idx, indices, indices_bytes);
  j->g = g, j->p = p, j->n = indices_bytes / sizeof(uint32_t);
  return sy_job_submit(bcast_job_run, bcast_job_done, j);
}
