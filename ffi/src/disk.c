/*
 * Disk pools: one file of fixed-size block slots, slot i at byte i * block_bytes, each slot
 * holding a block in logical order. I/O is pread/pwrite, with O_DIRECT when the block size is
 * a multiple of 4 KiB and the filesystem accepts it (tmpfs may not; then the page cache is
 * used). Direct I/O needs aligned memory, so unaligned buffers go through a bounce buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define DIRECT_ALIGN 4096u

static bool aligned(const void* p) { return ((uintptr_t)p % DIRECT_ALIGN) == 0; }

/* Reads or writes exactly len bytes at off, retrying short transfers and EINTR. */
static int32_t full_io(int fd, uint8_t* buf, uint64_t len, uint64_t off, bool write, const char* path) {
  while (len > 0) {
    size_t want = len > (1u << 30) ? (1u << 30) : (size_t)len;
    ssize_t n = write ? pwrite(fd, buf, want, (off_t)off) : pread(fd, buf, want, (off_t)off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sy_fail(SY_E_IO, "%s %s at byte %llu: %s", write ? "writing" : "reading", path, (unsigned long long)off, strerror(errno));
    if (n == 0) return sy_fail(SY_E_IO, "%s %s at byte %llu: unexpected end of file", write ? "writing" : "reading", path, (unsigned long long)off);
    buf += n, len -= (uint64_t)n, off += (uint64_t)n;
  }
  return SY_OK;
}

static uint8_t* bounce_alloc(uint64_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, DIRECT_ALIGN, bytes) != 0) return NULL;
  return p;
}

/* With O_DIRECT, probe one aligned read: some filesystems accept the flag but fail the I/O. */
static bool direct_works(int fd, uint64_t block_bytes) {
  uint8_t* probe = bounce_alloc(block_bytes);
  if (probe == NULL) return false;
  ssize_t n = pread(fd, probe, block_bytes, 0);
  free(probe);
  return n >= 0;
}

int32_t sy_disk_open(struct sy_pool* p, const char* path, uint32_t flags) {
  p->path = strdup(path);
  if (p->path == NULL) return sy_fail(SY_E_NOMEM, "out of memory");
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return sy_fail(SY_E_IO, "cannot open disk pool file %s: %s", path, strerror(errno));
  p->fd = fd;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return sy_fail(SY_E_IO, "disk pool path %s is not a regular file", path);
  p->unlink_on_close = (flags & SY_DISK_UNLINK_ON_CLOSE) != 0;
  uint64_t size = p->g.block_bytes * p->num_blocks;
  if ((uint64_t)st.st_size != size && ftruncate(fd, (off_t)size) != 0)
    return sy_fail(SY_E_IO, "cannot size %s to %llu bytes: %s", path, (unsigned long long)size, strerror(errno));
  /* Reserve the space now so a full disk fails here, not in the middle of a transfer.
     Filesystems without fallocate keep the sparse file. */
  if (fallocate(fd, 0, 0, (off_t)size) != 0 && errno == ENOSPC)
    return sy_fail(SY_E_IO, "not enough space for %llu bytes at %s", (unsigned long long)size, path);
  if (!(flags & SY_DISK_NO_DIRECT) && p->g.block_bytes % DIRECT_ALIGN == 0) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && fcntl(fd, F_SETFL, fl | O_DIRECT) == 0) {
      p->direct = direct_works(fd, p->g.block_bytes);
      if (!p->direct) fcntl(fd, F_SETFL, fl);
    }
  }
  return SY_OK;
}

void sy_disk_close(struct sy_pool* p) {
  if (p->fd >= 0) close(p->fd);
  if (p->unlink_on_close && p->path) unlink(p->path);
  free(p->path);
  p->fd = -1;
  p->path = NULL;
}

static int32_t slot_io(const struct sy_pool* p, uint64_t slot, uint8_t* buf, bool write) {
  uint64_t bytes = p->g.block_bytes, off = slot * bytes;
  if (!p->direct || aligned(buf)) return full_io(p->fd, buf, bytes, off, write, p->path);
  uint8_t* bounce = bounce_alloc(bytes);
  if (bounce == NULL) return sy_fail(SY_E_NOMEM, "out of memory for a bounce buffer");
  if (write) memcpy(bounce, buf, bytes);
  int32_t st = full_io(p->fd, bounce, bytes, off, write, p->path);
  if (st == SY_OK && !write) memcpy(buf, bounce, bytes);
  free(bounce);
  return st;
}

int32_t sy_disk_read_slot(const struct sy_pool* p, uint64_t slot, uint8_t* dst) { return slot_io(p, slot, dst, false); }
int32_t sy_disk_write_slot(const struct sy_pool* p, uint64_t slot, const uint8_t* src) {
  return slot_io(p, slot, (uint8_t*)src, true);
}

/* A block can be read or written in place when it is one host-addressable region. */
static bool in_place(const struct sy_pool* mem) { return !sy_is_cuda_device(mem) && sy_block_contiguous(mem); }

int32_t sy_disk_store_block(const struct sy_pool* mem, uint64_t b, const struct sy_pool* disk, uint64_t slot) {
  if (in_place(mem)) return sy_disk_write_slot(disk, slot, sy_chunk_ptr(mem, b, 0, 0));
  uint8_t* bounce = bounce_alloc(mem->g.block_bytes);
  if (bounce == NULL) return sy_fail(SY_E_NOMEM, "out of memory for a bounce buffer");
  int32_t st = sy_block_gather(mem, b, bounce);
  if (st == SY_OK) st = sy_disk_write_slot(disk, slot, bounce);
  free(bounce);
  return st;
}

int32_t sy_disk_load_block(const struct sy_pool* disk, uint64_t slot, const struct sy_pool* mem, uint64_t b) {
  if (in_place(mem)) return sy_disk_read_slot(disk, slot, sy_chunk_ptr(mem, b, 0, 0));
  uint8_t* bounce = bounce_alloc(mem->g.block_bytes);
  if (bounce == NULL) return sy_fail(SY_E_NOMEM, "out of memory for a bounce buffer");
  int32_t st = sy_disk_read_slot(disk, slot, bounce);
  if (st == SY_OK) st = sy_block_scatter(mem, b, bounce);
  free(bounce);
  return st;
}
