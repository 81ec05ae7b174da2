/*
 * The GPU copy engine (device <-> pinned host pools on the CUDA backend). Only reached when
 * runtime.c found a usable device, so every function pointer used here is bound.
 *
 * Per call: one non-blocking stream; fully contiguous blocks are one cudaMemcpyAsync each;
 * layer-separate blocks go through the gather/scatter kernel of libswitchyard_cuda.so when it
 * is loaded (one launch for every chunk of every pair; pinned host pointers are valid in the
 * kernel through unified addressing), else one cudaMemcpyAsync per chunk. Completion is a
 * CUDA event recorded after the last copy.
 */
#include <stdlib.h>

#include "internal.h"

#define STREAM_NON_BLOCKING 1u
#define EVENT_DISABLE_TIMING 2u

static int32_t enqueue_chunks(const struct sy_runtime* rt, const struct sy_pool* src, const struct sy_pool* dst,
                              const uint32_t* pairs, size_t npairs, sy_cuda_stream s) {
  const struct sy_geometry* g = &src->g;
  size_t per_block = (size_t)g->layers * g->outer;
  if (rt->caps & SY_CAP_KERNELS) {
    size_t n = npairs * per_block;
    void** srcs = malloc(n * sizeof(void*));
    void** dsts = malloc(n * sizeof(void*));
    int32_t st = SY_OK;
    if (srcs == NULL || dsts == NULL) st = sy_fail(SY_E_NOMEM, "out of memory for chunk pointers");
    for (size_t i = 0, k = 0; st == SY_OK && i < npairs; i++)
      for (uint32_t l = 0; l < g->layers; l++)
        for (uint32_t o = 0; o < g->outer; o++, k++) {
          srcs[k] = sy_chunk_ptr(src, pairs[2 * i], l, o);
          dsts[k] = sy_chunk_ptr(dst, pairs[2 * i + 1], l, o);
        }
    if (st == SY_OK) st = sy_cuda_check(rt->kernels.vectorized_copy(srcs, dsts, g->chunk_bytes, n, s), "gather/scatter kernel");
    free(srcs);
    free(dsts);
    return st;
  }
  for (size_t i = 0; i < npairs; i++)
    for (uint32_t l = 0; l < g->layers; l++)
      for (uint32_t o = 0; o < g->outer; o++) {
        int32_t st = sy_cuda_check(rt->cuda.MemcpyAsync(sy_chunk_ptr(dst, pairs[2 * i + 1], l, o), sy_chunk_ptr(src, pairs[2 * i], l, o),
                                                        g->chunk_bytes, SY_CUDA_MEMCPY_DEFAULT, s),
                                   "cudaMemcpyAsync");
        if (st != SY_OK) return st;
      }
  return SY_OK;
}

int32_t sy_cuda_copy_blocks(const struct sy_pool* src, const struct sy_pool* dst, const uint32_t* pairs, size_t npairs) {
  const struct sy_runtime* rt = sy_rt();
  if (!(rt->caps & SY_CAP_GPU)) return sy_fail(SY_E_UNAVAILABLE, "no usable GPU for a CUDA pool");
  int32_t st = sy_cuda_check(rt->cuda.SetDevice(rt->device), "cudaSetDevice");
  if (st != SY_OK) return st;
  sy_cuda_stream s = NULL;
  sy_cuda_event ev = NULL;
  st = sy_cuda_check(rt->cuda.StreamCreateWithFlags(&s, STREAM_NON_BLOCKING), "cudaStreamCreateWithFlags");
  if (st == SY_OK && sy_block_contiguous(src) && sy_block_contiguous(dst)) {
    for (size_t i = 0; st == SY_OK && i < npairs; i++)
      st = sy_cuda_check(rt->cuda.MemcpyAsync(sy_chunk_ptr(dst, pairs[2 * i + 1], 0, 0), sy_chunk_ptr(src, pairs[2 * i], 0, 0),
                                              src->g.block_bytes, SY_CUDA_MEMCPY_DEFAULT, s),
                         "cudaMemcpyAsync");
  } else if (st == SY_OK) {
    st = enqueue_chunks(rt, src, dst, pairs, npairs, s);
  }
  /* Wait for whatever was enqueued, even after a failure, before the pools can go away. */
  if (s != NULL) {
    int32_t ev_st = sy_cuda_check(rt->cuda.EventCreateWithFlags(&ev, EVENT_DISABLE_TIMING), "cudaEventCreateWithFlags");
    if (ev_st == SY_OK) ev_st = sy_cuda_check(rt->cuda.EventRecord(ev, s), "cudaEventRecord");
    if (ev_st == SY_OK) ev_st = sy_cuda_check(rt->cuda.EventSynchronize(ev), "cudaEventSynchronize");
    if (ev != NULL) rt->cuda.EventDestroy(ev);
    rt->cuda.StreamDestroy(s);
    if (st == SY_OK) st = ev_st;
  }
  return st;
}
