/*
 * Pools: N blocks of one geometry, in device memory, host memory or a disk file.
 *
 * Memory comes from cudaMalloc / cudaHostAlloc on the CUDA backend and from anonymous mmap
 * (page-aligned, zero-filled, committed lazily) on the CPU backend. Fully contiguous pools are
 * one region; layer-separate pools have one region per layer, as an engine's per-layer KV
 * tensors do. Disk pools are a file of block-sized slots (disk.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define MAX_LAYERS 4096u
#define MAX_OUTER 16u
#define MAX_PAGE (1u << 20)
#define MAX_INNER (1u << 24)
#define MAX_ELEM 16u
#define MAX_BLOCK_BYTES (1ull << 36)
#define MAX_POOL_BYTES (1ull << 46)
/* Transfer pairs carry uint32 indices. */
#define MAX_BLOCKS (1ull << 32)

int32_t sy_geometry_from(const sy_layout* l, size_t bytes, struct sy_geometry* g) {
  if (l == NULL) return sy_fail(SY_E_INVALID, "layout is NULL");
  if (bytes != sizeof(sy_layout)) return sy_fail(SY_E_INVALID, "layout is %zu bytes, expected %zu", bytes, sizeof(sy_layout));
  if (l->kind > SY_LAYOUT_LAYER_SEPARATE_OUTER) return sy_fail(SY_E_INVALID, "unknown layout kind %u", l->kind);
  if (l->num_layers < 1 || l->num_layers > MAX_LAYERS) return sy_fail(SY_E_INVALID, "num_layers %u is outside 1..%u", l->num_layers, MAX_LAYERS);
  if (l->outer_dim < 1 || l->outer_dim > MAX_OUTER) return sy_fail(SY_E_INVALID, "outer_dim %u is outside 1..%u", l->outer_dim, MAX_OUTER);
  if (l->page_size < 1 || l->page_size > MAX_PAGE) return sy_fail(SY_E_INVALID, "page_size %u is outside 1..%u", l->page_size, MAX_PAGE);
  if (l->inner_dim < 1 || l->inner_dim > MAX_INNER) return sy_fail(SY_E_INVALID, "inner_dim %u is outside 1..%u", l->inner_dim, MAX_INNER);
  if (l->elem_bytes < 1 || l->elem_bytes > MAX_ELEM) return sy_fail(SY_E_INVALID, "elem_bytes %u is outside 1..%u", l->elem_bytes, MAX_ELEM);
  uint64_t chunk = (uint64_t)l->page_size * l->inner_dim * l->elem_bytes; /* < 2^48: no overflow */
  uint64_t block = chunk * l->num_layers * l->outer_dim;                   /* < 2^64 */
  if (chunk > MAX_BLOCK_BYTES || block > MAX_BLOCK_BYTES) return sy_fail(SY_E_INVALID, "a block would be larger than %llu bytes", MAX_BLOCK_BYTES);
  *g = (struct sy_geometry){l->kind, l->num_layers, l->outer_dim, l->page_size, l->inner_dim, l->elem_bytes, chunk, block};
  return SY_OK;
}

uint8_t* sy_chunk_ptr(const struct sy_pool* p, uint64_t b, uint32_t layer, uint32_t outer) {
  const struct sy_geometry* g = &p->g;
  switch (g->kind) {
    case SY_LAYOUT_LAYER_SEPARATE:
      return p->regions[layer] + (b * g->outer + outer) * g->chunk_bytes;
    case SY_LAYOUT_LAYER_SEPARATE_OUTER:
      return p->regions[layer] + ((uint64_t)outer * p->num_blocks + b) * g->chunk_bytes;
    default:
      return p->regions[0] + b * g->block_bytes + ((uint64_t)layer * g->outer + outer) * g->chunk_bytes;
  }
}

/* ---- memory --------------------------------------------------------------------------------- */

/* Under AddressSanitizer, CPU pools come from the (instrumented) heap instead of mmap, so an
   address computed one byte past a region is reported instead of silently landing in the
   same page. */
#if defined(__SANITIZE_ADDRESS__)
static void* cpu_region_alloc(uint64_t bytes) {
  void* r = NULL;
  if (posix_memalign(&r, 4096, bytes) != 0) return NULL;
  memset(r, 0, bytes);
  return r;
}
static void cpu_region_free(void* r, uint64_t bytes) {
  SY_UNUSED(bytes);
  free(r);
}
#else
static void* cpu_region_alloc(uint64_t bytes) {
  void* r = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return r == MAP_FAILED ? NULL : r;
}
static void cpu_region_free(void* r, uint64_t bytes) { munmap(r, bytes); }
#endif

static void free_regions(struct sy_pool* p) {
  if (p->regions == NULL) return;
  const struct sy_runtime* rt = sy_rt();
  for (uint32_t i = 0; i < p->nregions; i++) {
    void* r = p->regions[i];
    if (r == NULL) continue;
    if (p->backend == SY_BACKEND_CUDA) {
      rt->cuda.SetDevice(rt->device);
      if (p->kind == SY_POOL_DEVICE) rt->cuda.Free(r);
      else rt->cuda.FreeHost(r);
    } else {
      cpu_region_free(r, p->region_bytes);
    }
  }
  free(p->regions);
  p->regions = NULL;
}

static int32_t alloc_regions(struct sy_pool* p) {
  const struct sy_geometry* g = &p->g;
  p->nregions = g->kind == SY_LAYOUT_FULLY_CONTIGUOUS ? 1 : g->layers;
  p->region_bytes = g->kind == SY_LAYOUT_FULLY_CONTIGUOUS ? g->block_bytes * p->num_blocks
                                                          : g->block_bytes / g->layers * p->num_blocks;
  p->regions = calloc(p->nregions, sizeof *p->regions);
  if (p->regions == NULL) return sy_fail(SY_E_NOMEM, "out of memory for the region table");
  const struct sy_runtime* rt = sy_rt();
  for (uint32_t i = 0; i < p->nregions; i++) {
    void* r = NULL;
    if (p->backend == SY_BACKEND_CUDA) {
      int32_t st = sy_cuda_check(rt->cuda.SetDevice(rt->device), "cudaSetDevice");
      if (st == SY_OK && p->kind == SY_POOL_DEVICE) {
        st = sy_cuda_check(rt->cuda.Malloc(&r, p->region_bytes), "cudaMalloc");
        if (st == SY_OK) st = sy_cuda_check(rt->cuda.Memset(r, 0, p->region_bytes), "cudaMemset");
      } else if (st == SY_OK) {
        st = sy_cuda_check(rt->cuda.HostAlloc(&r, p->region_bytes, 0), "cudaHostAlloc");
        if (st == SY_OK) memset(r, 0, p->region_bytes);
      }
      if (st != SY_OK) {
        if (r != NULL) (p->kind == SY_POOL_DEVICE ? rt->cuda.Free : rt->cuda.FreeHost)(r);
        return st == SY_E_CUDA ? SY_E_NOMEM : st;
      }
    } else {
      r = cpu_region_alloc(p->region_bytes);
      if (r == NULL) return sy_fail(SY_E_NOMEM, "cannot allocate %llu bytes for the pool", (unsigned long long)p->region_bytes);
    }
    p->regions[i] = r;
  }
  return SY_OK;
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

void sy_pool_free(struct sy_obj* obj) {
  struct sy_pool* p = (struct sy_pool*)obj;
  if (p->kind == SY_POOL_SHM || p->ipc) sy_mapped_close(p);
  else if (p->kind == SY_POOL_DISK) sy_disk_close(p);
  else free_regions(p);
  free(p);
}

static int32_t resolve_backend(uint32_t kind, uint32_t backend, uint32_t* out) {
  if (backend > SY_BACKEND_CUDA) return sy_fail(SY_E_INVALID, "unknown backend %u", backend);
  bool gpu = (sy_rt()->caps & SY_CAP_GPU) != 0;
  /* Disk pools do their own I/O; the memory side of a transfer picks the copy engine. */
  if (kind == SY_POOL_DISK) {
    if (backend == SY_BACKEND_CUDA && !gpu) goto unavailable;
    *out = SY_BACKEND_CPU;
    return SY_OK;
  }
  if (backend == SY_BACKEND_AUTO) backend = gpu ? SY_BACKEND_CUDA : SY_BACKEND_CPU;
  if (backend == SY_BACKEND_CUDA && !gpu) goto unavailable;
  *out = backend;
  return SY_OK;
unavailable:
  return sy_fail(SY_E_UNAVAILABLE, "the CUDA backend is not usable here: %s", sy_rt()->status);
}

int32_t sy_pool_create(uint32_t kind, uint32_t backend, const sy_layout* layout, size_t layout_bytes,
                       uint64_t num_blocks, const char* disk_path, size_t path_len, uint32_t flags) {
  sy_clear_error();
  if (kind > SY_POOL_DISK) return sy_fail(SY_E_INVALID, "unknown pool kind %u", kind);
  if (flags & ~(SY_DISK_UNLINK_ON_CLOSE | SY_DISK_NO_DIRECT)) return sy_fail(SY_E_INVALID, "unknown flags 0x%x", flags);
  struct sy_geometry g;
  int32_t st = sy_geometry_from(layout, layout_bytes, &g);
  if (st != SY_OK) return st;
  if (num_blocks < 1 || num_blocks > MAX_BLOCKS) return sy_fail(SY_E_INVALID, "num_blocks %llu is outside 1..2^32", (unsigned long long)num_blocks);
  if (g.block_bytes > MAX_POOL_BYTES / num_blocks) return sy_fail(SY_E_INVALID, "the pool would be larger than %llu bytes", MAX_POOL_BYTES);
  uint32_t resolved = SY_BACKEND_CPU;
  if ((st = resolve_backend(kind, backend, &resolved)) != SY_OK) return st;

  struct sy_pool* p = calloc(1, sizeof *p);
  if (p == NULL) return sy_fail(SY_E_NOMEM, "out of memory");
  p->obj.type = SY_OBJ_POOL;
  p->obj.free_fn = sy_pool_free;
  atomic_init(&p->obj.refs, 1);
  p->kind = kind, p->backend = resolved, p->num_blocks = num_blocks, p->g = g, p->fd = -1;

  if (kind == SY_POOL_DISK) {
    char* path = NULL;
    st = sy_copy_string(disk_path, path_len, 4095, "disk path", &path);
    if (st == SY_OK) {
      st = sy_disk_open(p, path, flags);
      free(path);
    }
  } else {
    st = alloc_regions(p);
  }
  if (st != SY_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sy_error_text());
    sy_pool_free(&p->obj);
    sy_set_error_text(msg);
    return st;
  }
  int32_t h = sy_handle_insert(&p->obj);
  if (h < 0) sy_pool_free(&p->obj);
  return h;
}

int32_t sy_pool_destroy(int32_t pool) {
  sy_clear_error();
  return sy_handle_remove(pool, SY_OBJ_POOL);
}

struct sy_pool* sy_pool_acquire(int32_t handle) { return (struct sy_pool*)sy_handle_acquire(handle, SY_OBJ_POOL); }

int32_t sy_pool_info(int32_t pool, uint64_t* out, size_t out_bytes) {
  sy_clear_error();
  if (out == NULL || out_bytes < SY_POOL_INFO_FIELDS * sizeof(uint64_t))
    return sy_fail(SY_E_INVALID, "info buffer holds %zu bytes, needs %zu", out ? out_bytes : 0, SY_POOL_INFO_FIELDS * sizeof(uint64_t));
  struct sy_pool* p = sy_pool_acquire(pool);
  if (p == NULL) return SY_E_HANDLE;
  const struct sy_geometry* g = &p->g;
  uint64_t v[SY_POOL_INFO_FIELDS] = {p->kind,  p->backend,     p->num_blocks, g->block_bytes, g->kind,  g->layers,
                                     g->outer, g->page,        g->inner,      g->elem,        p->direct, g->chunk_bytes};
  memcpy(out, v, sizeof v);
  sy_obj_release(&p->obj);
  return SY_OK;
}

/* ---- whole-block access in logical order ---------------------------------------------------- */

static int32_t block_copy(const struct sy_pool* p, uint64_t b, uint8_t* buf, bool to_pool) {
  const struct sy_geometry* g = &p->g;
  const struct sy_runtime* rt = sy_rt();
  bool cuda = sy_is_cuda_device(p);
  if (cuda) {
    int32_t st = sy_cuda_check(rt->cuda.SetDevice(rt->device), "cudaSetDevice");
    if (st != SY_OK) return st;
  }
  for (uint32_t l = 0; l < g->layers; l++) {
    for (uint32_t o = 0; o < g->outer; o++) {
      uint8_t* chunk = sy_chunk_ptr(p, b, l, o);
      uint8_t* mem = buf + ((uint64_t)l * g->outer + o) * g->chunk_bytes;
      if (cuda) {
        int32_t st = to_pool ? sy_cuda_check(rt->cuda.Memcpy(chunk, mem, g->chunk_bytes, SY_CUDA_MEMCPY_H2D), "cudaMemcpy")
                             : sy_cuda_check(rt->cuda.Memcpy(mem, chunk, g->chunk_bytes, SY_CUDA_MEMCPY_D2H), "cudaMemcpy");
        if (st != SY_OK) return st;
      } else if (to_pool) {
        memcpy(chunk, mem, g->chunk_bytes);
      } else {
        memcpy(mem, chunk, g->chunk_bytes);
      }
    }
  }
  return SY_OK;
}

int32_t sy_block_gather(const struct sy_pool* p, uint64_t b, uint8_t* dst) { return block_copy(p, b, dst, false); }
int32_t sy_block_scatter(const struct sy_pool* p, uint64_t b, const uint8_t* src) { return block_copy(p, b, (uint8_t*)src, true); }

static int32_t block_io(int32_t pool, uint64_t index, void* buf, size_t bytes, bool write) {
  sy_clear_error();
  struct sy_pool* p = sy_pool_acquire(pool);
  if (p == NULL) return SY_E_HANDLE;
  int32_t st = SY_OK;
  if (buf == NULL) st = sy_fail(SY_E_INVALID, "buffer is NULL");
  else if (bytes != p->g.block_bytes) st = sy_fail(SY_E_INVALID, "buffer is %zu bytes, a block is %llu", bytes, (unsigned long long)p->g.block_bytes);
  else if (write && p->read_only) st = sy_fail(SY_E_READ_ONLY, "the shared-memory pool is mapped read-only here");
  else if (index >= p->num_blocks) st = sy_fail(SY_E_RANGE, "block %llu is outside the pool (%llu blocks)", (unsigned long long)index, (unsigned long long)p->num_blocks);
  else if (p->kind == SY_POOL_DISK) st = write ? sy_disk_write_slot(p, index, buf) : sy_disk_read_slot(p, index, buf);
  else st = write ? sy_block_scatter(p, index, buf) : sy_block_gather(p, index, buf);
  sy_obj_release(&p->obj);
  return st;
}

int32_t sy_pool_write_block(int32_t pool, uint64_t index, const void* src, size_t src_bytes) {
  return block_io(pool, index, (void*)src, src_bytes, true);
}

int32_t sy_pool_read_block(int32_t pool, uint64_t index, void* dst, size_t dst_bytes) {
  return block_io(pool, index, dst, dst_bytes, false);
}
