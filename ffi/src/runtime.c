/*
 * Run-time discovery of the GPU path. Nothing here is linked: libcudart, our own kernel
 * library (libswitchyard_cuda.so) and libnccl.so.2 are opened with dlopen, once, on the first
 * call that needs them. Any failure (library missing, a symbol missing, cudaGetDeviceCount
 * reporting an error such as 35 "driver version is insufficient", or zero devices) means "no
 * GPU": the CPU path is used and sy_runtime_status() says why.
 *
 * Environment: SY_DISABLE_CUDA=1 skips CUDA entirely; SY_CUDA_DEVICE picks the device
 * ordinal (default 0); SY_CUDA_KERNELS_LIB overrides the kernel library's path (default: next
 * to this library).
 */
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The status text is a summary: a long path in it may be cut, which is fine. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static struct sy_runtime rt;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;

static void note(const char* fmt, const char* a, const char* b) {
  size_t used = strlen(rt.status);
  if (used + 1 >= sizeof rt.status) return;
  snprintf(rt.status + used, sizeof rt.status - used, fmt, a, b);
}

/* dlsym every name into the table of function pointers, in order; false if any is missing.
   memcpy (not a void** cast) keeps this clear of aliasing rules. */
static bool bind_all(void* lib, void* table, const char* const* names, size_t n, const char** missing) {
  for (size_t i = 0; i < n; i++) {
    void* sym = dlsym(lib, names[i]);
    if (sym == NULL) {
      *missing = names[i];
      return false;
    }
    memcpy((char*)table + i * sizeof sym, &sym, sizeof sym);
  }
  return true;
}

static void load_cudart(void) {
  static const char* const libs[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  void* lib = NULL;
  const char* name = NULL;
  for (size_t i = 0; i < sizeof libs / sizeof *libs && lib == NULL; i++) {
    lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    name = libs[i];
  }
  if (lib == NULL) {
    note("cuda runtime: not found (libcudart.so.13/.12)%s%s\n", "", "");
    return;
  }
  static const char* const syms[] = {
      "cudaGetDeviceCount", "cudaSetDevice", "cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaFreeHost",
      "cudaMemcpy", "cudaMemcpyAsync", "cudaMemset", "cudaStreamCreateWithFlags", "cudaStreamDestroy",
      "cudaEventCreateWithFlags", "cudaEventRecord", "cudaEventSynchronize", "cudaEventDestroy",
      "cudaGetErrorString"};
  _Static_assert(sizeof syms / sizeof *syms == sizeof(struct sy_cudart) / sizeof(void*), "cudart table");
  const char* missing = NULL;
  if (!bind_all(lib, &rt.cuda, syms, sizeof syms / sizeof *syms, &missing)) {
    memset(&rt.cuda, 0, sizeof rt.cuda);
    note("cuda runtime: %s lacks %s\n", name, missing);
    return;
  }
  rt.caps |= SY_CAP_CUDART;
  note("cuda runtime: %s loaded%s\n", name, "");
  /* CUDA IPC is optional: without it only sy_pool_ipc_handle / sy_pool_open_ipc fail. */
  static const char* const ipc_syms[] = {"cudaIpcGetMemHandle", "cudaIpcOpenMemHandle", "cudaIpcCloseMemHandle"};
  _Static_assert(sizeof ipc_syms / sizeof *ipc_syms == sizeof(struct sy_cuda_ipc) / sizeof(void*), "cuda ipc table");
  if (!bind_all(lib, &rt.ipc, ipc_syms, sizeof ipc_syms / sizeof *ipc_syms, &missing)) memset(&rt.ipc, 0, sizeof rt.ipc);

  int count = 0;
  sy_cuda_err err = rt.cuda.GetDeviceCount(&count);
  char buf[160];
  if (err != 0) {
    snprintf(buf, sizeof buf, "error %d, %s", err, rt.cuda.GetErrorString(err));
    note("cuda device: none (cudaGetDeviceCount: %s)%s\n", buf, "");
    return;
  }
  const char* dev_env = getenv("SY_CUDA_DEVICE");
  rt.device = dev_env && *dev_env ? atoi(dev_env) : 0;
  if (count <= 0 || rt.device < 0 || rt.device >= count) {
    snprintf(buf, sizeof buf, "%d device(s), wanted ordinal %d", count, rt.device);
    note("cuda device: none usable (%s)%s\n", buf, "");
    return;
  }
  err = rt.cuda.SetDevice(rt.device);
  if (err != 0) {
    snprintf(buf, sizeof buf, "error %d, %s", err, rt.cuda.GetErrorString(err));
    note("cuda device: cudaSetDevice failed (%s)%s\n", buf, "");
    return;
  }
  rt.caps |= SY_CAP_GPU;
  snprintf(buf, sizeof buf, "using ordinal %d of %d", rt.device, count);
  note("cuda device: %s%s\n", buf, "");
}

/* The kernel library sits next to this library unless SY_CUDA_KERNELS_LIB says otherwise. */
static void load_kernels(void) {
  if (!(rt.caps & SY_CAP_GPU)) {
    note("kernels: not loaded (no usable GPU)%s%s\n", "", "");
    return;
  }
  char path[4096];
  const char* env = getenv("SY_CUDA_KERNELS_LIB");
  Dl_info info;
  if (env && *env) {
    snprintf(path, sizeof path, "%s", env);
  } else if (dladdr((void*)sy_abi_version, &info) && info.dli_fname) {
    char self[4096];
    snprintf(self, sizeof self, "%s", info.dli_fname);
    snprintf(path, sizeof path, "%s/libswitchyard_cuda.so", dirname(self));
  } else {
    snprintf(path, sizeof path, "libswitchyard_cuda.so");
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    note("kernels: %s not loaded (%s); layer-separate GPU copies use cudaMemcpyAsync\n", path, dlerror());
    return;
  }
  static const char* const syms[] = {"syk_abi_version", "syk_vectorized_copy"};
  const char* missing = NULL;
  if (!bind_all(lib, &rt.kernels, syms, 2, &missing) || rt.kernels.abi_version() != SY_ABI_VERSION) {
    memset(&rt.kernels, 0, sizeof rt.kernels);
    note("kernels: %s is missing %s or has another ABI version\n", path, missing ? missing : "nothing");
    return;
  }
  rt.caps |= SY_CAP_KERNELS;
  note("kernels: %s loaded%s\n", path, "");
}

static void load_nccl(void) {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    note("nccl: libnccl.so.2 not found; replicated mode uses the shared-memory collective%s%s\n", "", "");
    return;
  }
  static const char* const syms[] = {"ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy", "ncclBcast",
                                     "ncclGroupStart", "ncclGroupEnd", "ncclGetErrorString"};
  _Static_assert(sizeof syms / sizeof *syms == sizeof(struct sy_nccl) / sizeof(void*), "nccl table");
  const char* missing = NULL;
  if (!bind_all(lib, &rt.nccl, syms, sizeof syms / sizeof *syms, &missing)) {
    memset(&rt.nccl, 0, sizeof rt.nccl);
    note("nccl: libnccl.so.2 lacks %s%s\n", missing, "");
    return;
  }
  rt.caps |= SY_CAP_NCCL;
  note("nccl: libnccl.so.2 loaded%s%s\n", "", "");
}

static void init_runtime(void) {
  rt.status[0] = '\0';
  const char* off = getenv("SY_DISABLE_CUDA");
  if (off && *off && strcmp(off, "0") != 0) {
    note("cuda runtime: disabled by SY_DISABLE_CUDA%s%s\n", "", "");
  } else {
    load_cudart();
  }
  load_kernels();
  load_nccl();
  note("path: %s%s", (rt.caps & SY_CAP_GPU) ? "gpu (cuda) and cpu" : "cpu only", "");
}

const struct sy_runtime* sy_rt(void) {
  pthread_once(&rt_once, init_runtime);
  return &rt;
}

uint32_t sy_capabilities(void) { return sy_rt()->caps; }

const char* sy_runtime_status(void) { return sy_rt()->status; }

int32_t sy_cuda_check(sy_cuda_err err, const char* what) {
  if (err == 0) return SY_OK;
  const char* text = rt.cuda.GetErrorString ? rt.cuda.GetErrorString(err) : "?";
  return sy_fail(SY_E_CUDA, "%s failed: CUDA error %d (%s)", what, err, text);
}

int32_t sy_nccl_check(int err, const char* what) {
  if (err == 0) return SY_OK;
  const char* text = rt.nccl.GetErrorString ? rt.nccl.GetErrorString(err) : "?";
  return sy_fail(SY_E_NCCL, "%s failed: NCCL error %d (%s)", what, err, text);
}
