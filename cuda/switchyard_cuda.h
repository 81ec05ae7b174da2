/*
 * The kernel library's C ABI (libswitchyard_cuda.so). The main library resolves these with
 * dlsym after it has found a usable GPU; nothing links against this file's library.
 */
#ifndef SWITCHYARD_CUDA_H
#define SWITCHYARD_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Must equal SY_ABI_VERSION of ffi/include/switchyard.h. */
#define SYK_ABI_VERSION 1u

uint32_t syk_abi_version(void);

/*
 * Copies copy_size bytes from src_ptrs[i] to dst_ptrs[i] for every i < num_pairs, on
 * `stream` (a cudaStream_t), with one kernel launch. The pointer arrays are host memory; they
 * are uploaded before the launch and may be freed when the call returns. Pointers may be
 * device memory or pinned host memory (unified addressing). Returns a cudaError_t (0 = ok);
 * completion is the caller's event on the stream.
 */
int syk_vectorized_copy(void* const* src_ptrs, void* const* dst_ptrs, size_t copy_size, size_t num_pairs, void* stream);

#ifdef __cplusplus
}
#endif
#endif
