/*
 * CUDA IPC: the GPU path of a disaggregated hand-off. A prefill process exports its device
 * pool's memory as a 64-byte cudaIpcMemHandle; a decode process on the same host opens it as
 * a device pool and pulls blocks with device->device copies of its own. cudart is reached
 * through the run-time table (runtime.c), never linked. Compiled everywhere; without a GPU
 * both calls return SY_E_UNAVAILABLE. Not run on the machines this project is tested on.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int32_t ipc_usable(void) {
  const struct sy_runtime* rt = sy_rt();
  if (!(rt->caps & SY_CAP_GPU)) return sy_fail(SY_E_UNAVAILABLE, "CUDA IPC needs a GPU: %s", rt->status);
  if (rt->ipc.GetMemHandle == NULL) return sy_fail(SY_E_UNAVAILABLE, "the CUDA runtime lacks cudaIpc* entry points");
  return SY_OK;
}

int32_t sy_pool_ipc_handle(int32_t pool, uint8_t* out, size_t out_bytes) {
  sy_clear_error();
  if (out == NULL || out_bytes != SY_IPC_HANDLE_BYTES) return sy_fail(SY_E_INVALID, "the IPC handle buffer must be %d bytes", SY_IPC_HANDLE_BYTES);
  struct sy_pool* p = sy_pool_acquire(pool);
  if (p == NULL) return SY_E_HANDLE;
  int32_t st = ipc_usable();
  if (st == SY_OK && !sy_is_cuda_device(p)) st = sy_fail(SY_E_INVALID, "only a CUDA device pool can be exported");
  if (st == SY_OK && p->nregions != 1) st = sy_fail(SY_E_LAYOUT, "only a fully contiguous pool (one region) can be exported");
  if (st == SY_OK) {
    sy_cuda_ipc_mem_handle h;
    const struct sy_runtime* rt = sy_rt();
    st = sy_cuda_check(rt->cuda.SetDevice(rt->device), "cudaSetDevice");
    if (st == SY_OK) st = sy_cuda_check(rt->ipc.GetMemHandle(&h, p->regions[0]), "cudaIpcGetMemHandle");
    if (st == SY_OK) memcpy(out, &h, sizeof h);
  }
  sy_obj_release(&p->obj);
  return st;
}

int32_t sy_pool_open_ipc(const uint8_t* handle, size_t handle_bytes, const sy_layout* layout, size_t layout_bytes, uint64_t num_blocks) {
  sy_clear_error();
  if (handle == NULL || handle_bytes != SY_IPC_HANDLE_BYTES) return sy_fail(SY_E_INVALID, "the IPC handle must be %d bytes", SY_IPC_HANDLE_BYTES);
  struct sy_geometry g;
  int32_t st = sy_geometry_from(layout, layout_bytes, &g);
  if (st != SY_OK) return st;
  if (g.kind != SY_LAYOUT_FULLY_CONTIGUOUS) return sy_fail(SY_E_LAYOUT, "an IPC pool must be fully contiguous");
  if (num_blocks < 1 || num_blocks > (1ull << 32)) return sy_fail(SY_E_INVALID, "num_blocks is outside 1..2^32");
  if ((st = ipc_usable()) != SY_OK) return st;
  const struct sy_runtime* rt = sy_rt();
  sy_cuda_ipc_mem_handle h;
  memcpy(&h, handle, sizeof h);
  void* ptr = NULL;
  st = sy_cuda_check(rt->cuda.SetDevice(rt->device), "cudaSetDevice");
  /* flag 1 = cudaIpcMemLazyEnablePeerAccess */
  if (st == SY_OK) st = sy_cuda_check(rt->ipc.OpenMemHandle(&ptr, h, 1), "cudaIpcOpenMemHandle");
  if (st != SY_OK) return st;
  struct sy_pool* p = calloc(1, sizeof *p);
  uint8_t** regions = calloc(1, sizeof *regions);
  if (p == NULL || regions == NULL) {
    free(p), free(regions);
    rt->ipc.CloseMemHandle(ptr);
    return sy_fail(SY_E_NOMEM, "out of memory");
  }
  p->obj.type = SY_OBJ_POOL;
  p->obj.free_fn = sy_pool_free;
  atomic_init(&p->obj.refs, 1);
  p->kind = SY_POOL_DEVICE, p->backend = SY_BACKEND_CUDA, p->num_blocks = num_blocks, p->g = g, p->fd = -1, p->ipc = true;
  p->regions = regions, p->regions[0] = ptr, p->nregions = 1, p->region_bytes = g.block_bytes * num_blocks;
  int32_t hd = sy_handle_insert(&p->obj);
  if (hd < 0) sy_pool_free(&p->obj);
  return hd;
}
