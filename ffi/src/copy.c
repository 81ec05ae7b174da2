/*
 * Transfers between pools (seed 003): validation, then the copy engine for the pair of pools.
 *   memory <-> memory, CPU backend: memcpy split over the cpu pool (whole blocks, or 1 MiB
 *     parts of large contiguous blocks; layer-separate blocks chunk by chunk);
 *   memory <-> memory, CUDA backend: copy_cuda.c (cudaMemcpyAsync or the gather kernel);
 *   memory <-> disk: one pread/pwrite per block on the io pool (disk.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Below this many bytes, waking helper threads costs more than it saves. */
#define INLINE_BYTES (256u << 10)
/* Large contiguous blocks are split into parts of this size so that few, big blocks still
   spread over every thread. */
#define PART_BYTES (1u << 20)

static const char* kind_name(uint32_t k) {
  return k == SY_POOL_DEVICE ? "device" : k == SY_POOL_HOST ? "host" : k == SY_POOL_DISK ? "disk" : k == SY_POOL_SHM ? "shared-memory" : "?";
}

/* A shared-memory pool is host memory another process can map: it moves as a host pool. */
static uint32_t direction_class(uint32_t kind) { return kind == SY_POOL_SHM ? SY_POOL_HOST : kind; }

static bool direction_allowed(uint32_t from, uint32_t to) {
  from = direction_class(from), to = direction_class(to);
  switch (from) {
    case SY_POOL_DEVICE: return to == SY_POOL_HOST || to == SY_POOL_DISK;
    case SY_POOL_HOST: return to == SY_POOL_DEVICE || to == SY_POOL_DISK;
    case SY_POOL_DISK: return to == SY_POOL_DEVICE;
  }
  return false;
}

int32_t sy_transfer_check(const struct sy_pool* src, const struct sy_pool* dst, const uint32_t* pairs, size_t npairs) {
  /* device->device only from another process's memory opened by CUDA IPC (ipc.c). */
  bool ipc_pull = src->ipc && dst->kind == SY_POOL_DEVICE;
  if (!ipc_pull && !direction_allowed(src->kind, dst->kind))
    return sy_fail(SY_E_DIRECTION, "invalid transfer type: %s -> %s (allowed: device->host, device->disk, host->device, host->disk, disk->device)",
                   kind_name(src->kind), kind_name(dst->kind));
  if (dst->read_only) return sy_fail(SY_E_READ_ONLY, "the destination shared-memory pool is mapped read-only here");
  const struct sy_geometry *a = &src->g, *b = &dst->g;
  if (a->layers != b->layers || a->outer != b->outer || a->page != b->page || a->inner != b->inner || a->elem != b->elem)
    return sy_fail(SY_E_LAYOUT, "block geometry differs: %ux%ux%ux%ux%u vs %ux%ux%ux%ux%u (layers x outer x page x inner x elem)",
                   a->layers, a->outer, a->page, a->inner, a->elem, b->layers, b->outer, b->page, b->inner, b->elem);
  if (src->kind != SY_POOL_DISK && dst->kind != SY_POOL_DISK && src->backend != dst->backend)
    return sy_fail(SY_E_INVALID, "the %s pool is on the %s backend but the %s pool is on the %s backend", kind_name(src->kind),
                   src->backend == SY_BACKEND_CUDA ? "cuda" : "cpu", kind_name(dst->kind), dst->backend == SY_BACKEND_CUDA ? "cuda" : "cpu");
  if (npairs > 0 && pairs == NULL) return sy_fail(SY_E_INVALID, "pairs is NULL");
  for (size_t i = 0; i < npairs; i++) {
    if (pairs[2 * i] >= src->num_blocks)
      return sy_fail(SY_E_RANGE, "pair %zu: source block %u is outside the %s pool (%llu blocks)", i, pairs[2 * i], kind_name(src->kind),
                     (unsigned long long)src->num_blocks);
    if (pairs[2 * i + 1] >= dst->num_blocks)
      return sy_fail(SY_E_RANGE, "pair %zu: destination block %u is outside the %s pool (%llu blocks)", i, pairs[2 * i + 1],
                     kind_name(dst->kind), (unsigned long long)dst->num_blocks);
  }
  return SY_OK;
}

/* ---- work items, shared by the CPU and disk engines --------------------------------------- */

struct work {
  const struct sy_pool *src, *dst;
  const uint32_t* pairs;
  uint64_t parts; /* parts per block (contiguous memcpy only) */
  pthread_mutex_t mu;
  int32_t status;
  char msg[512];
};

/* Keeps the first failure; later items see it and skip. */
static void work_fail(struct work* w, int32_t st) {
  pthread_mutex_lock(&w->mu);
  if (w->status == SY_OK) {
    w->status = st;
    snprintf(w->msg, sizeof w->msg, "%s", sy_error_text());
  }
  pthread_mutex_unlock(&w->mu);
}

static bool work_failed(struct work* w) {
  pthread_mutex_lock(&w->mu);
  bool failed = w->status != SY_OK;
  pthread_mutex_unlock(&w->mu);
  return failed;
}

static void memcpy_item(void* ctx, size_t i) {
  struct work* w = ctx;
  const struct sy_geometry* g = &w->src->g;
  uint64_t pair = i / w->parts, part = i % w->parts;
  uint32_t from = w->pairs[2 * pair], to = w->pairs[2 * pair + 1];
  if (sy_block_contiguous(w->src) && sy_block_contiguous(w->dst)) {
    uint64_t off = part * PART_BYTES;
    uint64_t len = g->block_bytes - off < PART_BYTES ? g->block_bytes - off : PART_BYTES;
    memcpy(sy_chunk_ptr(w->dst, to, 0, 0) + off, sy_chunk_ptr(w->src, from, 0, 0) + off, len);
    return;
  }
  for (uint32_t l = 0; l < g->layers; l++)
    for (uint32_t o = 0; o < g->outer; o++) memcpy(sy_chunk_ptr(w->dst, to, l, o), sy_chunk_ptr(w->src, from, l, o), g->chunk_bytes);
}

static void disk_item(void* ctx, size_t i) {
  struct work* w = ctx;
  if (work_failed(w)) return;
  uint32_t from = w->pairs[2 * i], to = w->pairs[2 * i + 1];
  int32_t st = w->dst->kind == SY_POOL_DISK ? sy_disk_store_block(w->src, from, w->dst, to)
                                            : sy_disk_load_block(w->src, from, w->dst, to);
  if (st != SY_OK) work_fail(w, st);
}

int32_t sy_transfer_run(const struct sy_pool* src, const struct sy_pool* dst, const uint32_t* pairs, size_t npairs) {
  if (npairs == 0) return SY_OK;
  bool disk = src->kind == SY_POOL_DISK || dst->kind == SY_POOL_DISK;
  if (!disk && src->backend == SY_BACKEND_CUDA) return sy_cuda_copy_blocks(src, dst, pairs, npairs);

  struct work w = {.src = src, .dst = dst, .pairs = pairs, .parts = 1, .status = SY_OK};
  pthread_mutex_init(&w.mu, NULL);
  if (disk) {
    sy_parallel_for(sy_io_pool(), npairs, disk_item, &w);
  } else {
    uint64_t bytes = src->g.block_bytes;
    if (sy_block_contiguous(src) && sy_block_contiguous(dst)) w.parts = (bytes + PART_BYTES - 1) / PART_BYTES;
    size_t items = npairs * w.parts;
    if (bytes * npairs <= INLINE_BYTES) {
      for (size_t i = 0; i < items; i++) memcpy_item(&w, i);
    } else {
      sy_parallel_for(sy_cpu_pool(), items, memcpy_item, &w);
    }
  }
  pthread_mutex_destroy(&w.mu);
  if (w.status != SY_OK) sy_set_error_text(w.msg);
  return w.status;
}

/* ---- the ABI entry points ------------------------------------------------------------------- */

/* Acquires both pools and checks the request; on success the caller owns both references. */
static int32_t open_transfer(int32_t src_pool, int32_t dst_pool, const uint32_t* pairs, size_t pairs_bytes,
                             struct sy_pool** src, struct sy_pool** dst) {
  *src = *dst = NULL;
  if (pairs_bytes % (2 * sizeof(uint32_t)) != 0)
    return sy_fail(SY_E_INVALID, "pairs is %zu bytes, not a whole number of (from, to) uint32 pairs", pairs_bytes);
  if ((*src = sy_pool_acquire(src_pool)) == NULL) return SY_E_HANDLE;
  if ((*dst = sy_pool_acquire(dst_pool)) == NULL) {
    sy_obj_release(&(*src)->obj);
    *src = NULL;
    return SY_E_HANDLE;
  }
  int32_t st = sy_transfer_check(*src, *dst, pairs, pairs_bytes / 8);
  if (st != SY_OK) {
    sy_obj_release(&(*src)->obj);
    sy_obj_release(&(*dst)->obj);
    *src = *dst = NULL;
  }
  return st;
}

int32_t sy_transfer(int32_t src_pool, int32_t dst_pool, const uint32_t* pairs, size_t pairs_bytes) {
  sy_clear_error();
  struct sy_pool *src, *dst;
  int32_t st = open_transfer(src_pool, dst_pool, pairs, pairs_bytes, &src, &dst);
  if (st != SY_OK) return st;
  st = sy_transfer_run(src, dst, pairs, pairs_bytes / 8);
  sy_obj_release(&src->obj);
  sy_obj_release(&dst->obj);
  return st;
}

struct transfer_job {
  struct sy_pool *src, *dst;
  uint32_t* pairs;
  size_t npairs;
};

static int32_t transfer_job_run(void* ctx) {
  struct transfer_job* j = ctx;
  return sy_transfer_run(j->src, j->dst, j->pairs, j->npairs);
}

static void transfer_job_done(void* ctx) {
  struct transfer_job* j = ctx;
  sy_obj_release(&j->src->obj);
  sy_obj_release(&j->dst->obj);
  free(j->pairs);
  free(j);
}

/* Small memory-to-memory copies are cheaper done now than handed to a job thread (a wake-up
   costs tens of microseconds); the caller still gets a job, already finished. */
static bool run_inline(const struct sy_pool* src, const struct sy_pool* dst, size_t npairs) {
  return src->kind != SY_POOL_DISK && dst->kind != SY_POOL_DISK && src->backend == SY_BACKEND_CPU &&
         src->g.block_bytes * npairs <= INLINE_BYTES;
}

int32_t sy_transfer_submit(int32_t src_pool, int32_t dst_pool, const uint32_t* pairs, size_t pairs_bytes) {
  sy_clear_error();
  struct sy_pool *src, *dst;
  int32_t st = open_transfer(src_pool, dst_pool, pairs, pairs_bytes, &src, &dst);
  if (st != SY_OK) return st;
  if (run_inline(src, dst, pairs_bytes / 8)) {
    st = sy_transfer_run(src, dst, pairs, pairs_bytes / 8);
    sy_obj_release(&src->obj);
    sy_obj_release(&dst->obj);
    return sy_job_finished(st);
  }
  struct transfer_job* j = calloc(1, sizeof *j);
  /* The caller's buffer may be gone (or reused) by the time the job runs: keep a copy. */
  if (j != NULL && pairs_bytes > 0) j->pairs = malloc(pairs_bytes);
  if (j == NULL || (pairs_bytes > 0 && j->pairs == NULL)) {
    free(j);
    sy_obj_release(&src->obj);
    sy_obj_release(&dst->obj);
    return sy_fail(SY_E_NOMEM, "out of memory");
  }
  if (pairs_bytes > 0) memcpy(j->pairs, pairs, pairs_bytes);
  j->src = src, j->dst = dst, j->npairs = pairs_bytes / 8;
  return sy_job_submit(transfer_job_run, transfer_job_done, j);
}
