/*
 * Switchyard native library: the C ABI (and the only header a caller needs).
 *
 * Two services in one shared library:
 *   - batch block hashing (XXH3-64 over u32-LE token blocks, spec §2.2);
 *   - KV block pools (device / host / disk) and batched block transfers between them, with a
 *     replicated mode that broadcasts device blocks from rank 0 to every rank (seed 003).
 *
 * Conventions (every call):
 *   - Status codes are int32_t: 0 = OK, 1 = PENDING (sy_job_wait only), < 0 = error. After an
 *     error, sy_last_error() returns a message for the calling thread.
 *   - Handles (pools, groups, jobs) are positive int32_t values from a checked table. A stale,
 *     closed or forged handle is an error (SY_E_HANDLE), never a crash.
 *   - Buffers come with their byte length; the library never reads or writes past it.
 *   - CUDA (libcudart) and NCCL (libnccl.so.2) are loaded with dlopen at run time. Without a
 *     usable GPU everything runs on the CPU path; sy_capabilities() / sy_runtime_status() say
 *     which path is live.
 *
 * The TypeScript binding mirrors this file in src/native/ffi.ts. Bump SY_ABI_VERSION on any
 * change to a signature, a struct or a constant's meaning.
 */
#ifndef SWITCHYARD_H
#define SWITCHYARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SY_ABI_VERSION 1u

/* The library is built with -fvisibility=hidden: only SY_API functions are exported. */
#ifndef SY_API
#define SY_API __attribute__((visibility("default")))
#endif

/* ---- Status codes ---------------------------------------------------------------------- */
#define SY_OK 0
#define SY_PENDING 1          /* a job is still running (sy_job_wait) */
#define SY_E_INVALID -1       /* a bad argument: null pointer, wrong size, unknown enum value */
#define SY_E_HANDLE -2        /* unknown, closed or wrong-type handle */
#define SY_E_RANGE -3         /* a block index outside its pool */
#define SY_E_DIRECTION -4     /* a pool pair that is not one of the five transfer directions */
#define SY_E_LAYOUT -5        /* the two pools' block geometry differs */
#define SY_E_NOMEM -6         /* an allocation failed */
#define SY_E_IO -7            /* disk open / read / write failed */
#define SY_E_CUDA -8          /* a CUDA runtime call failed */
#define SY_E_UNAVAILABLE -9   /* the backend asked for cannot be used here (no GPU) */
#define SY_E_TIMEOUT -10      /* a collective peer did not arrive in time */
#define SY_E_BUSY -11         /* too many handles or jobs in flight */
#define SY_E_COLLECTIVE -12   /* ranks disagree (sizes, world) or the group was aborted */
#define SY_E_NCCL -13         /* an NCCL call failed */
#define SY_E_NOT_FOUND -14    /* a named shared-memory segment does not exist (any more) */
#define SY_E_READ_ONLY -15    /* a write into a pool mapped read-only (a shared-memory reader) */

/* ---- Pools ----------------------------------------------------------------------------- */
#define SY_POOL_DEVICE 0u
#define SY_POOL_HOST 1u /* pinned host memory on the GPU path */
#define SY_POOL_DISK 2u
#define SY_POOL_SHM 3u /* host memory in a named POSIX shared-memory segment (see sy_shm_pool_create) */

#define SY_BACKEND_AUTO 0u /* CUDA when a GPU is usable (device/host pools), else CPU */
#define SY_BACKEND_CPU 1u  /* aligned host memory; copies are multi-threaded memcpy */
#define SY_BACKEND_CUDA 2u /* cudaMalloc / cudaHostAlloc; copies on a CUDA stream */

/* Block layout kinds (spec §9 "Layouts"). */
#define SY_LAYOUT_FULLY_CONTIGUOUS 0u /* one region [blocks][layers][outer][page][inner] */
#define SY_LAYOUT_LAYER_SEPARATE 1u   /* one region per layer, block-first [blocks][outer][page][inner] */
#define SY_LAYOUT_LAYER_SEPARATE_OUTER 2u /* one region per layer, outer-first [outer][blocks][page][inner] */

/* Pool creation flags. */
#define SY_DISK_UNLINK_ON_CLOSE 1u /* delete the disk file when the pool is destroyed */
#define SY_DISK_NO_DIRECT 2u       /* never use O_DIRECT */

/*
 * Block geometry, passed by pointer with its size (sizeof(sy_layout) = 24). A block holds
 * num_layers x outer_dim chunks ("outer" is 2 for K and V); a chunk is page_size tokens x
 * inner_dim elements (heads x head dim) x elem_bytes. The logical byte order of a block (what
 * sy_pool_read_block returns and what a disk slot holds) is chunk (layer, outer) at offset
 * (layer * outer_dim + outer) * chunk_bytes.
 */
typedef struct sy_layout {
  uint32_t kind;
  uint32_t num_layers;
  uint32_t outer_dim;
  uint32_t page_size;
  uint32_t inner_dim;
  uint32_t elem_bytes;
} sy_layout;

/* sy_pool_info fills this many uint64_t values, in this order. */
#define SY_POOL_INFO_FIELDS 12
/* [0] kind  [1] backend  [2] num_blocks  [3] block_bytes  [4] layout kind  [5] num_layers
   [6] outer_dim  [7] page_size  [8] inner_dim  [9] elem_bytes  [10] direct I/O (disk: 1 if
   O_DIRECT is in use)  [11] chunk_bytes */

/* ---- Capabilities (sy_capabilities bit mask) --------------------------------------------- */
#define SY_CAP_CUDART 1u  /* libcudart was found and loaded */
#define SY_CAP_GPU 2u     /* a CUDA device is usable: the GPU path is live */
#define SY_CAP_KERNELS 4u /* libswitchyard_cuda.so (gather/scatter kernel) is loaded */
#define SY_CAP_NCCL 8u    /* libnccl.so.2 was found and loaded */

/* Group creation flags. */
#define SY_GROUP_CPU_ONLY 1u /* never use NCCL, even when it is usable */

/* ---- Library ----------------------------------------------------------------------------- */
SY_API uint32_t sy_abi_version(void);
/* Message for the last error on the calling thread ("" if none). Valid until the next call. */
SY_API const char* sy_last_error(void);
SY_API uint32_t sy_capabilities(void);
/* One line per component: CUDA runtime, device, kernels, NCCL, and the path in use. */
SY_API const char* sy_runtime_status(void);

/* ---- Hashing ----------------------------------------------------------------------------- */
/*
 * Hashes floor(n_tokens / block_size) blocks: out[i] = XXH3_64bits_withSeed(bytes of tokens
 * [i*bs, (i+1)*bs) as u32 little-endian, seed). Returns the number of blocks (0 when
 * block_size is 0). Returns SIZE_MAX (and sets the error) when tokens or out is NULL while
 * needed, or when out_cap is smaller than the number of blocks; nothing is written then.
 */
SY_API size_t sy_hash_blocks(const uint32_t* tokens, size_t n_tokens, uint32_t block_size, uint64_t seed,
                      uint64_t* out, size_t out_cap);

/*
 * Rolling sequence hashes over n block hashes (spec §2.3): out[0] = blocks[0];
 * out[i] = XXH3_64bits_withSeed(u64_le(out[i-1]) ‖ u64_le(blocks[i]), 1337). out may be
 * blocks itself (in place); other overlaps are not allowed. Returns n; SIZE_MAX (and sets the
 * error) when blocks or out is NULL while n > 0, or when out_cap < n; nothing is written then.
 * Added after ABI version 1 without a version bump (no existing signature changed):
 * bindings look it up separately and fall back to their own code when it is missing.
 */
SY_API size_t sy_hash_seq(const uint64_t* blocks, size_t n, uint64_t* out, size_t out_cap);

/* ---- Pools ------------------------------------------------------------------------------- */
/*
 * Creates a pool of num_blocks blocks. disk_path (UTF-8, path_len bytes, no NUL needed) is
 * required for disk pools and ignored otherwise; an existing file is reused and resized.
 * Returns a pool handle (> 0) or an error status (< 0).
 */
SY_API int32_t sy_pool_create(uint32_t kind, uint32_t backend, const sy_layout* layout, size_t layout_bytes,
                       uint64_t num_blocks, const char* disk_path, size_t path_len, uint32_t flags);
/* Destroys the pool. Transfers already running on it finish first; the handle is dead at once. */
SY_API int32_t sy_pool_destroy(int32_t pool);
/* Fills out[0..SY_POOL_INFO_FIELDS) (out_bytes >= 8 * SY_POOL_INFO_FIELDS). */
SY_API int32_t sy_pool_info(int32_t pool, uint64_t* out, size_t out_bytes);
/* Copies one block in logical order between the pool and a caller buffer of block_bytes. */
SY_API int32_t sy_pool_write_block(int32_t pool, uint64_t index, const void* src, size_t src_bytes);
SY_API int32_t sy_pool_read_block(int32_t pool, uint64_t index, void* dst, size_t dst_bytes);

/* ---- Shared-memory pools (disaggregated prefill -> decode on one host) ------------------ */
/*
 * A shared-memory pool is a host pool (CPU backend) whose blocks live in the POSIX segment
 * "/<name>" (name: [A-Za-z0-9._-], 1..200 bytes), so another process can read them. One
 * process writes: sy_shm_pool_create makes the segment (it must not exist yet: SY_E_INVALID
 * otherwise), sizes it, writes a header (magic, geometry, block count) and maps it read-write.
 * Readers map it read-only with sy_shm_pool_open: the header must match their layout
 * (SY_E_LAYOUT) and the segment must be as large as the header says (SY_E_INVALID); a missing
 * segment is SY_E_NOT_FOUND. Writing into a read-only pool, or using it as a transfer
 * destination, is SY_E_READ_ONLY. For transfers a shared-memory pool counts as a host pool
 * (shm->device, shm->disk, device->shm). Destroying a pool unmaps it and never removes the
 * segment: sy_shm_unlink does that (any process; SY_E_NOT_FOUND when it is already gone).
 * The GPU path (pinned registration of the segment) is not implemented: on a CUDA device pool
 * the backends differ and the transfer is refused (SY_E_INVALID).
 * Added after ABI version 1 without a version bump: bindings look these up separately.
 */
SY_API int32_t sy_shm_pool_create(const char* name, size_t name_len, const sy_layout* layout, size_t layout_bytes,
                                  uint64_t num_blocks);
SY_API int32_t sy_shm_pool_open(const char* name, size_t name_len, const sy_layout* layout, size_t layout_bytes);
SY_API int32_t sy_shm_unlink(const char* name, size_t name_len);

/*
 * CUDA IPC (the GPU path of disaggregation): the 64-byte cudaIpcMemHandle of a CUDA device
 * pool (fully contiguous layout: one region) and, in another process, a device pool over that
 * memory (cudaIpcOpenMemHandle; destroyed with cudaIpcCloseMemHandle). On the CPU path both
 * return SY_E_UNAVAILABLE. Compiled everywhere; runs only where a GPU is present.
 */
#define SY_IPC_HANDLE_BYTES 64
SY_API int32_t sy_pool_ipc_handle(int32_t pool, uint8_t* out, size_t out_bytes);
SY_API int32_t sy_pool_open_ipc(const uint8_t* handle, size_t handle_bytes, const sy_layout* layout, size_t layout_bytes,
                                uint64_t num_blocks);

/* ---- Transfers ----------------------------------------------------------------------------- */
/*
 * Copies blocks between two pools: pairs holds (from index, to index) as uint32_t pairs,
 * pairs_bytes = 8 x number of pairs. Allowed directions (seed 003): device->host,
 * device->disk, host->device, host->disk, disk->device. Everything is validated before any
 * byte moves. sy_transfer blocks until done; sy_transfer_submit returns a job handle (> 0) at
 * once (the pairs are copied) or an error status.
 */
SY_API int32_t sy_transfer(int32_t src_pool, int32_t dst_pool, const uint32_t* pairs, size_t pairs_bytes);
SY_API int32_t sy_transfer_submit(int32_t src_pool, int32_t dst_pool, const uint32_t* pairs, size_t pairs_bytes);

/*
 * Waits up to timeout_us microseconds (< 0: no limit, 0: just look) for a job. Returns
 * SY_PENDING while it runs; once it has finished returns its final status (its message, on
 * error, through sy_last_error) and releases the job, so its handle is then dead.
 */
SY_API int32_t sy_job_wait(int32_t job, int64_t timeout_us);

/* ---- Replication groups (seed 003 replicated mode) ---------------------------------------- */
/*
 * Joins group `name` ([A-Za-z0-9._-], 1..100 bytes) as `rank` of `world` (0 <= rank < world
 * <= 64). Blocks until every rank has joined or timeout_ms passes (0: 30 s). All ranks must
 * be processes on one host. NCCL is used for CUDA device pools when rank 0 finds it usable;
 * otherwise the group is a CPU collective over POSIX shared memory.
 */
SY_API int32_t sy_group_create(const char* name, size_t name_len, int32_t rank, int32_t world, int64_t timeout_ms,
                        uint32_t flags);
SY_API int32_t sy_group_destroy(int32_t group);
/* 1 when the group broadcasts with NCCL, 0 when over shared memory, < 0 on error. */
SY_API int32_t sy_group_uses_nccl(int32_t group);
/* Every rank waits until all ranks have called it. */
SY_API int32_t sy_group_barrier(int32_t group);
/*
 * Collective: every rank calls it with the same indices (uint32_t, indices_bytes = 4 x
 * count) into a memory pool of the same geometry; afterwards each rank's blocks equal rank
 * 0's. sy_group_bcast_submit returns a job handle for sy_job_wait.
 */
SY_API int32_t sy_group_bcast(int32_t group, int32_t pool, const uint32_t* indices, size_t indices_bytes);
SY_API int32_t sy_group_bcast_submit(int32_t group, int32_t pool, const uint32_t* indices, size_t indices_bytes);

#ifdef __cplusplus
}
#endif
#endif /* SWITCHYARD_H */
