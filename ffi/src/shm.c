/*
 * Shared-memory pools: a host pool whose blocks live in a named POSIX shared-memory segment,
 * so a prefill engine (the one writer) can hand a prompt's KV blocks to a decode engine on the
 * same host (readers, mapped read-only). The segment starts with a one-page header (magic,
 * geometry, block count) that a reader checks against its own layout before touching a block;
 * the blocks follow, in the pool's layout (one region, or one per layer, back to back).
 *
 * Lifetime: destroying a pool only unmaps it. The segment stays until sy_shm_unlink (by any
 * process), so the writer may close its mapping as soon as the blocks are written, and the
 * reader decides when the hand-off is over.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define SHM_MAGIC 0x314d48534b565953ull /* "SYVKSHM1" little-endian */
#define SHM_HEADER_BYTES 4096u
#define SHM_NAME_MAX 200u
#define SHM_MAX_BYTES (1ull << 40)

struct shm_header {
  uint64_t magic;
  uint32_t version, layout_kind;
  uint32_t layers, outer, page, inner, elem, pad;
  uint64_t num_blocks, block_bytes;
};

/* "/" + a name of [A-Za-z0-9._-]: no path separators, so it stays inside /dev/shm. */
static int32_t shm_path(const char* name, size_t len, char out[SHM_NAME_MAX + 2]) {
  if (name == NULL || len == 0) return sy_fail(SY_E_INVALID, "the segment name is empty");
  if (len > SHM_NAME_MAX) return sy_fail(SY_E_INVALID, "the segment name is longer than %u bytes", SHM_NAME_MAX);
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return sy_fail(SY_E_INVALID, "the segment name may hold only [A-Za-z0-9._-] (byte %zu is 0x%02x)", i, (unsigned char)c);
  }
  if (name[0] == '.') return sy_fail(SY_E_INVALID, "the segment name may not start with '.'");
  out[0] = '/';
  memcpy(out + 1, name, len);
  out[len + 1] = '\0';
  return SY_OK;
}

void sy_mapped_close(struct sy_pool* p) {
  if (p->ipc) {
    const struct sy_runtime* rt = sy_rt();
    if (p->regions != NULL && p->regions[0] != NULL && rt->ipc.CloseMemHandle != NULL) rt->ipc.CloseMemHandle(p->regions[0]);
  } else if (p->map_base != NULL) {
    munmap(p->map_base, p->map_bytes);
  }
  p->map_base = NULL;
  free(p->regions);
  p->regions = NULL;
}

/* The pool object over a mapping: regions back to back after the header. */
static int32_t insert_mapped(const struct sy_geometry* g, uint64_t num_blocks, uint8_t* base, uint64_t bytes, bool read_only) {
  struct sy_pool* p = calloc(1, sizeof *p);
  if (p == NULL) {
    munmap(base, bytes);
    return sy_fail(SY_E_NOMEM, "out of memory");
  }
  p->obj.type = SY_OBJ_POOL;
  p->obj.free_fn = sy_pool_free;
  atomic_init(&p->obj.refs, 1);
  p->kind = SY_POOL_SHM, p->backend = SY_BACKEND_CPU, p->num_blocks = num_blocks, p->g = *g, p->fd = -1;
  p->map_base = base, p->map_bytes = bytes, p->read_only = read_only;
  p->nregions = g->kind == SY_LAYOUT_FULLY_CONTIGUOUS ? 1 : g->layers;
  p->region_bytes = g->block_bytes / p->nregions * num_blocks;
  p->regions = calloc(p->nregions, sizeof *p->regions);
  if (p->regions == NULL) {
    sy_pool_free(&p->obj);
    return sy_fail(SY_E_NOMEM, "out of memory for the region table");
  }
  for (uint32_t i = 0; i < p->nregions; i++) p->regions[i] = base + SHM_HEADER_BYTES + (uint64_t)i * p->region_bytes;
  int32_t h = sy_handle_insert(&p->obj);
  if (h < 0) sy_pool_free(&p->obj);
  return h;
}

static int32_t data_bytes(const struct sy_geometry* g, uint64_t num_blocks, uint64_t* total) {
  if (num_blocks < 1 || num_blocks > (1ull << 32)) return sy_fail(SY_E_INVALID, "num_blocks %llu is outside 1..2^32", (unsigned long long)num_blocks);
  if (g->block_bytes > (SHM_MAX_BYTES - SHM_HEADER_BYTES) / num_blocks)
    return sy_fail(SY_E_INVALID, "the segment would be larger than %llu bytes", SHM_MAX_BYTES);
  *total = SHM_HEADER_BYTES + g->block_bytes * num_blocks;
  return SY_OK;
}

int32_t sy_shm_pool_create(const char* name, size_t name_len, const sy_layout* layout, size_t layout_bytes, uint64_t num_blocks) {
  sy_clear_error();
  char path[SHM_NAME_MAX + 2];
  struct sy_geometry g;
  uint64_t total = 0;
  int32_t st = shm_path(name, name_len, path);
  if (st == SY_OK) st = sy_geometry_from(layout, layout_bytes, &g);
  if (st == SY_OK) st = data_bytes(&g, num_blocks, &total);
  if (st != SY_OK) return st;
  int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return sy_fail(SY_E_INVALID, "shared-memory segment %s already exists", path);
    return sy_fail(SY_E_IO, "shm_open(%s): %s", path, strerror(errno));
  }
  /* posix_fallocate reserves the pages now, so a full /dev/shm is an error here instead of a
     SIGBUS on the first write. */
  int err = ftruncate(fd, (off_t)total) != 0 ? errno : posix_fallocate(fd, 0, (off_t)total);
  uint8_t* base = MAP_FAILED;
  if (err == 0) {
    base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) err = errno;
  }
  close(fd);
  if (err != 0) {
    shm_unlink(path);
    return sy_fail(err == ENOSPC ? SY_E_NOMEM : SY_E_IO, "sizing shared-memory segment %s to %llu bytes: %s", path,
                   (unsigned long long)total, strerror(err));
  }
  struct shm_header* h = (struct shm_header*)base;
  *h = (struct shm_header){SHM_MAGIC, 1, g.kind, g.layers, g.outer, g.page, g.inner, g.elem, 0, num_blocks, g.block_bytes};
  int32_t handle = insert_mapped(&g, num_blocks, base, total, false);
  if (handle < 0) shm_unlink(path);
  return handle;
}

int32_t sy_shm_pool_open(const char* name, size_t name_len, const sy_layout* layout, size_t layout_bytes) {
  sy_clear_error();
  char path[SHM_NAME_MAX + 2];
  struct sy_geometry g;
  int32_t st = shm_path(name, name_len, path);
  if (st == SY_OK) st = sy_geometry_from(layout, layout_bytes, &g);
  if (st != SY_OK) return st;
  int fd = shm_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    if (errno == ENOENT) return sy_fail(SY_E_NOT_FOUND, "shared-memory segment %s does not exist", path);
    return sy_fail(SY_E_IO, "shm_open(%s): %s", path, strerror(errno));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return sy_fail(SY_E_IO, "fstat(%s): %s", path, strerror(e));
  }
  uint64_t size = (uint64_t)sb.st_size;
  if (size < SHM_HEADER_BYTES) {
    close(fd);
    return sy_fail(SY_E_INVALID, "shared-memory segment %s is %llu bytes, smaller than its header", path, (unsigned long long)size);
  }
  uint8_t* base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED) return sy_fail(SY_E_IO, "mmap(%s): %s", path, strerror(e));
  struct shm_header h;
  memcpy(&h, base, sizeof h);
  uint64_t want = 0;
  if (h.magic != SHM_MAGIC || h.version != 1) {
    st = sy_fail(SY_E_INVALID, "shared-memory segment %s is not a switchyard pool (or not initialised yet)", path);
  } else if (h.layout_kind != g.kind || h.layers != g.layers || h.outer != g.outer || h.page != g.page || h.inner != g.inner ||
             h.elem != g.elem || h.block_bytes != g.block_bytes) {
    st = sy_fail(SY_E_LAYOUT, "shared-memory segment %s holds %ux%ux%ux%ux%u blocks (layout %u), the reader expects %ux%ux%ux%ux%u (layout %u)",
                 path, h.layers, h.outer, h.page, h.inner, h.elem, h.layout_kind, g.layers, g.outer, g.page, g.inner, g.elem, g.kind);
  } else if ((st = data_bytes(&g, h.num_blocks, &want)) == SY_OK && size < want) {
    st = sy_fail(SY_E_INVALID, "shared-memory segment %s is %llu bytes, its header says %llu", path, (unsigned long long)size,
                 (unsigned long long)want);
  }
  if (st != SY_OK) {
    munmap(base, size);
    return st;
  }
  return insert_mapped(&g, h.num_blocks, base, size, true);
}

int32_t sy_shm_unlink(const char* name, size_t name_len) {
  sy_clear_error();
  char path[SHM_NAME_MAX + 2];
  int32_t st = shm_path(name, name_len, path);
  if (st != SY_OK) return st;
  if (shm_unlink(path) != 0) {
    if (errno == ENOENT) return sy_fail(SY_E_NOT_FOUND, "shared-memory segment %s does not exist", path);
    return sy_fail(SY_E_IO, "shm_unlink(%s): %s", path, strerror(errno));
  }
  return SY_OK;
}
