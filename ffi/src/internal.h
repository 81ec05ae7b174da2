/* Declarations shared by the library's translation units; not part of the ABI. */
#ifndef SY_INTERNAL_H
#define SY_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/switchyard.h"

#define SY_UNUSED(x) (void)(x)

/* ---- error.c: thread-local error message ------------------------------------------------- */
/* Records status + message for the calling thread and returns status (for `return sy_fail(...)`). */
int32_t sy_fail(int32_t status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void sy_clear_error(void);
const char* sy_error_text(void);
void sy_set_error_text(const char* text);

/* ---- handles.c: one checked table for pools, groups and jobs ----------------------------- */
enum sy_obj_type { SY_OBJ_POOL = 1, SY_OBJ_GROUP = 2, SY_OBJ_JOB = 3 };

/* Every handle-table object starts with this header. refs counts the table's reference plus
   every holder; free_fn runs when it drops to zero. */
struct sy_obj {
  _Atomic int refs;
  enum sy_obj_type type;
  void (*free_fn)(struct sy_obj*);
};

/* Inserts obj (its refs already count the table's reference). Returns handle > 0 or < 0. */
int32_t sy_handle_insert(struct sy_obj* obj);
/* Looks up handle of the given type and takes a reference; NULL (error set) when invalid. */
struct sy_obj* sy_handle_acquire(int32_t handle, enum sy_obj_type type);
/* Removes the handle (drops the table's reference). SY_E_HANDLE when already gone. */
int32_t sy_handle_remove(int32_t handle, enum sy_obj_type type);
void sy_obj_release(struct sy_obj* obj);

/* ---- threads.c: small pthread pools ------------------------------------------------------ */
struct sy_tpool;
/* CPU copies, disk I/O, and long-running jobs each get their own pool (created lazily). */
struct sy_tpool* sy_cpu_pool(void);
struct sy_tpool* sy_io_pool(void);
struct sy_tpool* sy_job_pool(void);
/* Runs fn(arg) on a pool thread. Returns false (nothing queued) when out of memory. */
bool sy_tpool_submit(struct sy_tpool* p, void (*fn)(void*), void* arg);
/* Runs fn(ctx, i) for i in [0, n) on the calling thread plus up to the pool's threads. The
   caller works too, so this never waits on a busy pool. */
void sy_parallel_for(struct sy_tpool* p, size_t n, void (*fn)(void* ctx, size_t i), void* ctx);

/* ---- runtime.c: CUDA / kernels / NCCL loaded with dlopen --------------------------------- */
typedef int sy_cuda_err;
typedef void* sy_cuda_stream;
typedef void* sy_cuda_event;
enum { SY_CUDA_MEMCPY_H2D = 1, SY_CUDA_MEMCPY_D2H = 2, SY_CUDA_MEMCPY_DEFAULT = 4 };

struct sy_cudart {
  sy_cuda_err (*GetDeviceCount)(int*);
  sy_cuda_err (*SetDevice)(int);
  sy_cuda_err (*Malloc)(void**, size_t);
  sy_cuda_err (*Free)(void*);
  sy_cuda_err (*HostAlloc)(void**, size_t, unsigned);
  sy_cuda_err (*FreeHost)(void*);
  sy_cuda_err (*Memcpy)(void*, const void*, size_t, int);
  sy_cuda_err (*MemcpyAsync)(void*, const void*, size_t, int, sy_cuda_stream);
  sy_cuda_err (*Memset)(void*, int, size_t);
  sy_cuda_err (*StreamCreateWithFlags)(sy_cuda_stream*, unsigned);
  sy_cuda_err (*StreamDestroy)(sy_cuda_stream);
  sy_cuda_err (*EventCreateWithFlags)(sy_cuda_event*, unsigned);
  sy_cuda_err (*EventRecord)(sy_cuda_event, sy_cuda_stream);
  sy_cuda_err (*EventSynchronize)(sy_cuda_event);
  sy_cuda_err (*EventDestroy)(sy_cuda_event);
  const char* (*GetErrorString)(sy_cuda_err);
};

/* cuda/switchyard_cuda.h, resolved from libswitchyard_cuda.so. */
struct sy_kernels {
  uint32_t (*abi_version)(void);
  int (*vectorized_copy)(void* const* src_ptrs, void* const* dst_ptrs, size_t copy_size, size_t num_pairs,
                         void* stream);
};

typedef struct { char internal[128]; } sy_nccl_id;
typedef void* sy_nccl_comm;
struct sy_nccl {
  int (*GetUniqueId)(sy_nccl_id*);
  int (*CommInitRank)(sy_nccl_comm*, int, sy_nccl_id, int);
  int (*CommDestroy)(sy_nccl_comm);
  int (*Bcast)(void*, size_t, int, int, sy_nccl_comm, sy_cuda_stream);
  int (*GroupStart)(void);
  int (*GroupEnd)(void);
  const char* (*GetErrorString)(int);
};

/* Optional cudart entry points (CUDA IPC); NULL when the runtime lacks them. */
typedef struct { char reserved[64]; } sy_cuda_ipc_mem_handle; /* cudaIpcMemHandle_t */
struct sy_cuda_ipc {
  sy_cuda_err (*GetMemHandle)(sy_cuda_ipc_mem_handle* handle, void* ptr);
  sy_cuda_err (*OpenMemHandle)(void** ptr, sy_cuda_ipc_mem_handle handle, unsigned flags); /* by value, as cudart */
  sy_cuda_err (*CloseMemHandle)(void* ptr);
};

struct sy_runtime {
  uint32_t caps;
  int device;
  struct sy_cudart cuda;
  struct sy_cuda_ipc ipc;
  struct sy_kernels kernels;
  struct sy_nccl nccl;
  char status[1024];
};
const struct sy_runtime* sy_rt(void);
/* Fails with SY_E_CUDA and the CUDA error string when err != 0. */
int32_t sy_cuda_check(sy_cuda_err err, const char* what);
int32_t sy_nccl_check(int err, const char* what);

/* ---- pool.c ------------------------------------------------------------------------------ */
struct sy_geometry {
  uint32_t kind, layers, outer, page, inner, elem;
  uint64_t chunk_bytes, block_bytes;
};

struct sy_pool {
  struct sy_obj obj;
  uint32_t kind, backend;
  uint64_t num_blocks;
  struct sy_geometry g;
  /* memory pools: 1 region (fully contiguous) or one per layer */
  uint8_t** regions;
  uint32_t nregions;
  uint64_t region_bytes;
  /* disk pools */
  int fd;
  bool direct;
  bool unlink_on_close;
  char* path;
  /* shared-memory pools (shm.c) and CUDA IPC pools (ipc.c): one mapping holds every region */
  uint8_t* map_base;
  uint64_t map_bytes;
  bool read_only; /* a shared-memory reader: never a write or transfer destination */
  bool ipc;       /* regions[0] came from cudaIpcOpenMemHandle */
};

int32_t sy_geometry_from(const sy_layout* l, size_t bytes, struct sy_geometry* g);
/* Frees a pool of any kind (the handle table's free_fn). */
void sy_pool_free(struct sy_obj* obj);
/* Unmaps a shared-memory pool or closes a CUDA IPC mapping (shm.c / ipc.c). */
void sy_mapped_close(struct sy_pool* p);

struct sy_pool* sy_pool_acquire(int32_t handle);
/* Address of chunk (layer, outer) of block b (memory pools). */
uint8_t* sy_chunk_ptr(const struct sy_pool* p, uint64_t b, uint32_t layer, uint32_t outer);
/* True when a block is one contiguous region (fully contiguous memory pools). */
static inline bool sy_block_contiguous(const struct sy_pool* p) {
  return p->g.kind == SY_LAYOUT_FULLY_CONTIGUOUS || p->g.layers * p->g.outer == 1;
}
static inline bool sy_is_cuda_device(const struct sy_pool* p) {
  return p->backend == SY_BACKEND_CUDA && p->kind == SY_POOL_DEVICE;
}
/* Copies one block between a memory pool and a logical-order buffer (either direction). */
int32_t sy_block_gather(const struct sy_pool* p, uint64_t b, uint8_t* dst);
int32_t sy_block_scatter(const struct sy_pool* p, uint64_t b, const uint8_t* src);

/* ---- disk.c ------------------------------------------------------------------------------ */
int32_t sy_disk_open(struct sy_pool* p, const char* path, uint32_t flags);
void sy_disk_close(struct sy_pool* p);
int32_t sy_disk_read_slot(const struct sy_pool* p, uint64_t slot, uint8_t* dst);
int32_t sy_disk_write_slot(const struct sy_pool* p, uint64_t slot, const uint8_t* src);
/* Memory block <-> disk slot, through an aligned bounce buffer when needed. */
int32_t sy_disk_store_block(const struct sy_pool* mem, uint64_t b, const struct sy_pool* disk, uint64_t slot);
int32_t sy_disk_load_block(const struct sy_pool* disk, uint64_t slot, const struct sy_pool* mem, uint64_t b);

/* ---- copy.c ------------------------------------------------------------------------------ */
/* Validates a transfer (pools, direction, geometry, indices). */
int32_t sy_transfer_check(const struct sy_pool* src, const struct sy_pool* dst, const uint32_t* pairs,
                          size_t npairs);
/* Runs a validated transfer on the calling thread (plus pool helpers). */
int32_t sy_transfer_run(const struct sy_pool* src, const struct sy_pool* dst, const uint32_t* pairs,
                        size_t npairs);
/* CUDA path pieces (copy_cuda.c). */
int32_t sy_cuda_copy_blocks(const struct sy_pool* src, const struct sy_pool* dst, const uint32_t* pairs,
                            size_t npairs);

/* ---- group.c ----------------------------------------------------------------------------- */
struct sy_group;
struct sy_group* sy_group_acquire(int32_t handle);
int32_t sy_group_run_bcast(struct sy_group* g, const struct sy_pool* pool, const uint32_t* indices, size_t n);

/* ---- jobs.c ------------------------------------------------------------------------------ */
/* Queues run(ctx) on the job pool; done(ctx) always runs afterwards (release resources). */
int32_t sy_job_submit(int32_t (*run)(void* ctx), void (*done)(void* ctx), void* ctx);
/* A job that has already finished with `status` (work done inline by the submitter). */
int32_t sy_job_finished(int32_t status);

/* ---- helpers ----------------------------------------------------------------------------- */
/* Copies a (ptr, len) UTF-8 argument into a NUL-terminated heap string; checks length and NULs. */
int32_t sy_copy_string(const char* s, size_t len, size_t max_len, const char* what, char** out);
/* Wall-clock-independent monotonic time in nanoseconds. */
uint64_t sy_now_ns(void);

#endif /* SY_INTERNAL_H */
