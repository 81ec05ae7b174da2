/* Pool lifecycle, whole-block access, and every argument check on the pool calls. */
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

#include "harness.h"

static void create_info_destroy(void) {
  for (uint32_t layout = 0; layout <= SY_LAYOUT_LAYER_SEPARATE_OUTER; layout++) {
    int32_t p = make_pool(SY_POOL_HOST, layout, 8, NULL);
    CHECK(p > 0);
    uint64_t info[SY_POOL_INFO_FIELDS];
    CHECK_EQ(sy_pool_info(p, info, sizeof info), SY_OK);
    CHECK_EQ(info[0], SY_POOL_HOST);
    CHECK_EQ(info[1], SY_BACKEND_CPU);
    CHECK_EQ(info[2], 8);
    CHECK_EQ(info[3], 2 * 2 * 4 * 256 * 2);
    CHECK_EQ(info[4], layout);
    CHECK_EQ(info[11], 4 * 256 * 2);
    CHECK_EQ(sy_pool_destroy(p), SY_OK);
  }
}

static void memory_blocks_round_trip_in_logical_order(void) {
  for (uint32_t layout = 0; layout <= SY_LAYOUT_LAYER_SEPARATE_OUTER; layout++) {
    int32_t p = make_pool(SY_POOL_DEVICE, layout, 5, NULL);
    CHECK(p > 0);
    uint8_t in[8192], out[8192];
    for (uint64_t b = 0; b < 5; b++) {
      fill_pattern(in, sizeof in, (uint32_t)(b + 10 * layout));
      CHECK_EQ(sy_pool_write_block(p, b, in, sizeof in), SY_OK);
    }
    for (uint64_t b = 0; b < 5; b++) {
      fill_pattern(in, sizeof in, (uint32_t)(b + 10 * layout));
      CHECK_EQ(sy_pool_read_block(p, b, out, sizeof out), SY_OK);
      CHECK(memcmp(in, out, sizeof in) == 0);
    }
    CHECK_EQ(sy_pool_destroy(p), SY_OK);
  }
}

static void new_pools_read_as_zero(void) {
  int32_t p = make_pool(SY_POOL_HOST, SY_LAYOUT_FULLY_CONTIGUOUS, 2, NULL);
  uint8_t out[8192], zero[8192] = {0};
  memset(out, 0xAB, sizeof out);
  CHECK_EQ(sy_pool_read_block(p, 1, out, sizeof out), SY_OK);
  CHECK(memcmp(out, zero, sizeof out) == 0);
  sy_pool_destroy(p);
}

static void disk_pool_file_and_round_trip(void) {
  const char* path = temp_path("disk");
  int32_t p = make_pool(SY_POOL_DISK, SY_LAYOUT_FULLY_CONTIGUOUS, 4, path);
  CHECK(p > 0);
  struct stat st;
  CHECK(stat(path, &st) == 0 && st.st_size == 4 * 8192);
  uint8_t in[8192], out[8192];
  fill_pattern(in, sizeof in, 99);
  CHECK_EQ(sy_pool_write_block(p, 3, in, sizeof in), SY_OK);
  CHECK_EQ(sy_pool_read_block(p, 3, out, sizeof out), SY_OK);
  CHECK(memcmp(in, out, sizeof in) == 0);
  /* unaligned caller buffers go through the bounce buffer under O_DIRECT */
  static uint8_t big[8192 + 1];
  CHECK_EQ(sy_pool_read_block(p, 3, big + 1, 8192), SY_OK);
  CHECK(memcmp(in, big + 1, 8192) == 0);
  CHECK_EQ(sy_pool_destroy(p), SY_OK);
  CHECK(stat(path, &st) != 0); /* SY_DISK_UNLINK_ON_CLOSE */
}

static void bad_layouts_are_rejected(void) {
  sy_layout l = test_layout(SY_LAYOUT_FULLY_CONTIGUOUS);
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, NULL, sizeof l, 4, NULL, 0, 0), SY_E_INVALID);
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &l, sizeof l - 4, 4, NULL, 0, 0), SY_E_INVALID);
  sy_layout bad = l;
  bad.kind = 9;
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &bad, sizeof bad, 4, NULL, 0, 0), SY_E_INVALID);
  bad = l, bad.num_layers = 0;
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &bad, sizeof bad, 4, NULL, 0, 0), SY_E_INVALID);
  CHECK_ERR("num_layers");
  bad = l, bad.elem_bytes = 0;
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &bad, sizeof bad, 4, NULL, 0, 0), SY_E_INVALID);
  bad = l, bad.page_size = UINT32_MAX, bad.inner_dim = UINT32_MAX;
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &bad, sizeof bad, 4, NULL, 0, 0), SY_E_INVALID);
}

static void bad_pool_arguments_are_rejected(void) {
  sy_layout l = test_layout(SY_LAYOUT_FULLY_CONTIGUOUS);
  CHECK_EQ(sy_pool_create(7, SY_BACKEND_CPU, &l, sizeof l, 4, NULL, 0, 0), SY_E_INVALID);
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, 9, &l, sizeof l, 4, NULL, 0, 0), SY_E_INVALID);
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &l, sizeof l, 0, NULL, 0, 0), SY_E_INVALID);
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &l, sizeof l, 1ull << 40, NULL, 0, 0), SY_E_INVALID);
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &l, sizeof l, 4, NULL, 0, 0xF0), SY_E_INVALID);
  /* beyond the 64 TiB cap: refused before any allocation */
  sy_layout huge = l;
  huge.num_layers = 1, huge.outer_dim = 1, huge.inner_dim = 1u << 24, huge.page_size = 1024, huge.elem_bytes = 4;
  CHECK_EQ(sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &huge, sizeof huge, 4096, NULL, 0, 0), SY_E_INVALID);
  /* ~62 TiB: the kernel refuses the mapping (or, with overcommit, grants it untouched) */
  int32_t h = sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &huge, sizeof huge, 1000, NULL, 0, 0);
  if (h < 0) {
    CHECK_EQ(h, SY_E_NOMEM);
    CHECK_ERR("cannot allocate");
  } else {
    CHECK_EQ(sy_pool_destroy(h), SY_OK);
  }
  /* disk: missing path, a NUL inside it, a directory, an unreachable place */
  CHECK_EQ(sy_pool_create(SY_POOL_DISK, SY_BACKEND_CPU, &l, sizeof l, 4, NULL, 0, 0), SY_E_INVALID);
  CHECK_EQ(sy_pool_create(SY_POOL_DISK, SY_BACKEND_CPU, &l, sizeof l, 4, "/tmp/a\0b", 8, 0), SY_E_INVALID);
  CHECK_EQ(sy_pool_create(SY_POOL_DISK, SY_BACKEND_CPU, &l, sizeof l, 4, "/tmp", 4, 0), SY_E_IO);
  CHECK_EQ(sy_pool_create(SY_POOL_DISK, SY_BACKEND_CPU, &l, sizeof l, 4, "/nonexistent-dir/x", 18, 0), SY_E_IO);
  CHECK_ERR("nonexistent-dir");
}

static void cuda_backend_without_gpu_is_unavailable(void) {
  if (sy_capabilities() & SY_CAP_GPU) return; /* covered by the GPU contract run instead */
  sy_layout l = test_layout(SY_LAYOUT_FULLY_CONTIGUOUS);
  CHECK_EQ(sy_pool_create(SY_POOL_DEVICE, SY_BACKEND_CUDA, &l, sizeof l, 4, NULL, 0, 0), SY_E_UNAVAILABLE);
  CHECK_ERR("not usable");
  /* AUTO falls back to the CPU path */
  int32_t p = sy_pool_create(SY_POOL_DEVICE, SY_BACKEND_AUTO, &l, sizeof l, 4, NULL, 0, 0);
  CHECK(p > 0);
  uint64_t info[SY_POOL_INFO_FIELDS];
  CHECK_EQ(sy_pool_info(p, info, sizeof info), SY_OK);
  CHECK_EQ(info[1], SY_BACKEND_CPU);
  sy_pool_destroy(p);
}

static void bad_handles_and_closed_pools_fail_cleanly(void) {
  uint8_t buf[8192];
  uint64_t info[SY_POOL_INFO_FIELDS];
  int32_t forged[] = {0, -1, 1, 12345, INT32_MAX, INT32_MIN};
  for (size_t i = 0; i < sizeof forged / sizeof *forged; i++) {
    CHECK_EQ(sy_pool_destroy(forged[i]), SY_E_HANDLE);
    CHECK_EQ(sy_pool_info(forged[i], info, sizeof info), SY_E_HANDLE);
    CHECK_EQ(sy_pool_read_block(forged[i], 0, buf, sizeof buf), SY_E_HANDLE);
  }
  int32_t p = make_pool(SY_POOL_HOST, SY_LAYOUT_FULLY_CONTIGUOUS, 2, NULL);
  CHECK_EQ(sy_pool_destroy(p), SY_OK);
  CHECK_EQ(sy_pool_destroy(p), SY_E_HANDLE);
  CHECK_ERR("not open");
  CHECK_EQ(sy_pool_write_block(p, 0, buf, sizeof buf), SY_E_HANDLE);
  /* a new pool may reuse the slot but never the handle */
  int32_t q = make_pool(SY_POOL_HOST, SY_LAYOUT_FULLY_CONTIGUOUS, 2, NULL);
  CHECK(q != p);
  CHECK_EQ(sy_pool_read_block(p, 0, buf, sizeof buf), SY_E_HANDLE);
  sy_pool_destroy(q);
}

static void block_access_checks_index_size_and_buffer(void) {
  int32_t p = make_pool(SY_POOL_HOST, SY_LAYOUT_LAYER_SEPARATE, 2, NULL);
  uint8_t buf[8192];
  CHECK_EQ(sy_pool_read_block(p, 2, buf, sizeof buf), SY_E_RANGE);
  CHECK_EQ(sy_pool_read_block(p, UINT64_MAX, buf, sizeof buf), SY_E_RANGE);
  CHECK_EQ(sy_pool_read_block(p, 0, buf, sizeof buf - 1), SY_E_INVALID);
  CHECK_EQ(sy_pool_write_block(p, 0, NULL, sizeof buf), SY_E_INVALID);
  uint64_t small[2];
  CHECK_EQ(sy_pool_info(p, small, sizeof small), SY_E_INVALID);
  CHECK_EQ(sy_pool_info(p, NULL, 96), SY_E_INVALID);
  sy_pool_destroy(p);
}

void register_pool_tests(void) {
  add_test("pool: create, info, destroy for each layout", create_info_destroy);
  add_test("pool: memory blocks round-trip in logical order", memory_blocks_round_trip_in_logical_order);
  add_test("pool: new pools read as zero", new_pools_read_as_zero);
  add_test("pool: disk file of slots, round trip, unlink on close", disk_pool_file_and_round_trip);
  add_test("pool: bad layouts are rejected", bad_layouts_are_rejected);
  add_test("pool: bad pool arguments are rejected", bad_pool_arguments_are_rejected);
  add_test("pool: cuda backend without a gpu is unavailable", cuda_backend_without_gpu_is_unavailable);
  add_test("pool: bad handles and closed pools fail cleanly", bad_handles_and_closed_pools_fail_cleanly);
  add_test("pool: block access checks index, size and buffer", block_access_checks_index_size_and_buffer);
}
