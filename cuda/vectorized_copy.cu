// Gather/scatter copy for layer-separate KV blocks (spec §9, "vectorized_copy"): one launch
// copies every (src, dst) chunk pair of a transfer. Thread blocks walk the pairs in a
// grid-stride loop; each pair is copied with the widest vector its alignment allows (16, 8, 4
// bytes, else single bytes).
#include <cuda_runtime.h>

#include "switchyard_cuda.h"

namespace {

template <typename T>
__device__ void copy_as(const char* src, char* dst, size_t bytes) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  size_t n = bytes / sizeof(T);
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
}

__global__ void vectorized_copy_kernel(void* const* src_ptrs, void* const* dst_ptrs, size_t copy_size,
                                       size_t num_pairs) {
  for (size_t p = blockIdx.x; p < num_pairs; p += gridDim.x) {
    const char* src = static_cast<const char*>(src_ptrs[p]);
    char* dst = static_cast<char*>(dst_ptrs[p]);
    uintptr_t align = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | copy_size;
    if ((align & 15) == 0) copy_as<int4>(src, dst, copy_size);
    else if ((align & 7) == 0) copy_as<int2>(src, dst, copy_size);
    else if ((align & 3) == 0) copy_as<int>(src, dst, copy_size);
    else copy_as<char>(src, dst, copy_size);
  }
}

constexpr unsigned kThreads = 256;
constexpr size_t kMaxBlocks = 4096;

}  // namespace

extern "C" uint32_t syk_abi_version(void) { return SYK_ABI_VERSION; }

extern "C" int syk_vectorized_copy(void* const* src_ptrs, void* const* dst_ptrs, size_t copy_size, size_t num_pairs,
                                   void* stream) {
  if (num_pairs == 0 || copy_size == 0) return cudaSuccess;
  if (src_ptrs == nullptr || dst_ptrs == nullptr) return cudaErrorInvalidValue;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  void** table = nullptr;  // [src pointers | dst pointers] on the device
  size_t half = num_pairs * sizeof(void*);
  cudaError_t err = cudaMallocAsync(reinterpret_cast<void**>(&table), 2 * half, s);
  if (err != cudaSuccess) return err;
  // From pageable memory these return once the bytes are staged, so the caller may free
  // its arrays as soon as this function returns.
  err = cudaMemcpyAsync(table, src_ptrs, half, cudaMemcpyHostToDevice, s);
  if (err == cudaSuccess) err = cudaMemcpyAsync(table + num_pairs, dst_ptrs, half, cudaMemcpyHostToDevice, s);
  if (err == cudaSuccess) {
    unsigned blocks = static_cast<unsigned>(num_pairs < kMaxBlocks ? num_pairs : kMaxBlocks);
    vectorized_copy_kernel<<<blocks, kThreads, 0, s>>>(table, table + num_pairs, copy_size, num_pairs);
    err = cudaGetLastError();
  }
  cudaError_t freed = cudaFreeAsync(table, s);
  return err != cudaSuccess ? err : freed;
}
