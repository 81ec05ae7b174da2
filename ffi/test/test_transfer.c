/* Transfers: byte-exact round trips for every direction and layout, and every refusal. */
#include <stdint.h>
#include <unistd.h>

#include "harness.h"

#define BLOCK 8192

static const char* kind_tag(uint32_t k) { return k == SY_POOL_DEVICE ? "dev" : k == SY_POOL_HOST ? "host" : "disk"; }

static int32_t pool_of(uint32_t kind, uint32_t layout, uint64_t blocks, const char* tag) {
  return make_pool(kind, layout, blocks, kind == SY_POOL_DISK ? temp_path(tag) : NULL);
}

/* Fills src with patterns, moves `n` blocks i -> n-1-i (a reversal, so indices matter), then
   checks each destination block and that untouched ones stay zero. */
static void round_trip(uint32_t from, uint32_t from_layout, uint32_t to, uint32_t to_layout, uint32_t n, int async) {
  uint32_t blocks = n + 2;
  int32_t src = pool_of(from, from_layout, blocks, "src");
  int32_t dst = pool_of(to, to_layout, blocks, "dst");
  CHECK(src > 0 && dst > 0);
  static uint8_t buf[BLOCK], want[BLOCK], zero[BLOCK];
  for (uint32_t b = 0; b < blocks; b++) {
    fill_pattern(buf, BLOCK, b + 1);
    CHECK_EQ(sy_pool_write_block(src, b, buf, BLOCK), SY_OK);
  }
  uint32_t* pairs = malloc(8 * (size_t)n);
  for (uint32_t i = 0; i < n; i++) pairs[2 * i] = i, pairs[2 * i + 1] = n - 1 - i;
  if (async) {
    int32_t job = sy_transfer_submit(src, dst, pairs, 8 * (size_t)n);
    CHECK(job > 0);
    memset(pairs, 0xFF, 8 * (size_t)n); /* the library kept its own copy */
    CHECK_EQ(sy_job_wait(job, -1), SY_OK);
    CHECK_EQ(sy_job_wait(job, 0), SY_E_HANDLE); /* released after the final wait */
  } else {
    CHECK_EQ(sy_transfer(src, dst, pairs, 8 * (size_t)n), SY_OK);
  }
  for (uint32_t i = 0; i < n; i++) {
    fill_pattern(want, BLOCK, i + 1);
    CHECK_EQ(sy_pool_read_block(dst, n - 1 - i, buf, BLOCK), SY_OK);
    if (memcmp(buf, want, BLOCK) != 0) {
      fprintf(stderr, "%s(layout %u) -> %s(layout %u): block %u differs\n", kind_tag(from), from_layout, kind_tag(to), to_layout, i);
      exit(1);
    }
  }
  CHECK_EQ(sy_pool_read_block(dst, n, buf, BLOCK), SY_OK);
  CHECK(memcmp(buf, zero, BLOCK) == 0);
  free(pairs);
  CHECK_EQ(sy_pool_destroy(src), SY_OK);
  CHECK_EQ(sy_pool_destroy(dst), SY_OK);
}

static const uint32_t directions[5][2] = {{SY_POOL_DEVICE, SY_POOL_HOST}, {SY_POOL_DEVICE, SY_POOL_DISK}, {SY_POOL_HOST, SY_POOL_DEVICE},
                                          {SY_POOL_HOST, SY_POOL_DISK},   {SY_POOL_DISK, SY_POOL_DEVICE}};

static void every_direction_and_layout_round_trips(void) {
  for (int d = 0; d < 5; d++)
    for (uint32_t a = 0; a <= SY_LAYOUT_LAYER_SEPARATE_OUTER; a++)
      for (uint32_t b = 0; b <= SY_LAYOUT_LAYER_SEPARATE_OUTER; b++) round_trip(directions[d][0], a, directions[d][1], b, 6, 0);
}

/* 80 blocks of 8 KiB = 640 KiB: above the inline threshold, so the thread pools do the work. */
static void large_batches_round_trip_on_the_thread_pools(void) {
  for (int d = 0; d < 5; d++) {
    round_trip(directions[d][0], SY_LAYOUT_FULLY_CONTIGUOUS, directions[d][1], SY_LAYOUT_LAYER_SEPARATE, 80, 0);
    round_trip(directions[d][0], SY_LAYOUT_FULLY_CONTIGUOUS, directions[d][1], SY_LAYOUT_FULLY_CONTIGUOUS, 80, 1);
  }
}

/* 3 MiB blocks are split into 1 MiB parts; check the seams. */
static void big_blocks_split_into_parts(void) {
  sy_layout l = {SY_LAYOUT_FULLY_CONTIGUOUS, 3, 2, 16, 8192, 4};
  uint64_t bytes = 3ull * 2 * 16 * 8192 * 4;
  int32_t src = sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &l, sizeof l, 3, NULL, 0, 0);
  int32_t dst = sy_pool_create(SY_POOL_DEVICE, SY_BACKEND_CPU, &l, sizeof l, 3, NULL, 0, 0);
  uint8_t* in = malloc(bytes);
  uint8_t* out = malloc(bytes);
  fill_pattern(in, bytes, 5);
  CHECK_EQ(sy_pool_write_block(src, 2, in, bytes), SY_OK);
  uint32_t pairs[2] = {2, 0};
  CHECK_EQ(sy_transfer(src, dst, pairs, sizeof pairs), SY_OK);
  CHECK_EQ(sy_pool_read_block(dst, 0, out, bytes), SY_OK);
  CHECK(memcmp(in, out, bytes) == 0);
  free(in), free(out);
  sy_pool_destroy(src), sy_pool_destroy(dst);
}

static void disk_direct_io_is_optional(void) {
  /* 3000-byte blocks cannot use O_DIRECT; SY_DISK_NO_DIRECT turns it off on request */
  sy_layout odd = {SY_LAYOUT_FULLY_CONTIGUOUS, 1, 2, 3, 250, 2};
  const char* path = temp_path("odd");
  int32_t d = sy_pool_create(SY_POOL_DISK, SY_BACKEND_CPU, &odd, sizeof odd, 4, path, strlen(path), SY_DISK_UNLINK_ON_CLOSE);
  int32_t h = sy_pool_create(SY_POOL_HOST, SY_BACKEND_CPU, &odd, sizeof odd, 4, NULL, 0, 0);
  CHECK(d > 0 && h > 0);
  uint64_t info[SY_POOL_INFO_FIELDS];
  CHECK_EQ(sy_pool_info(d, info, sizeof info), SY_OK);
  CHECK_EQ(info[10], 0);
  uint8_t in[3000], out[3000];
  fill_pattern(in, sizeof in, 3);
  CHECK_EQ(sy_pool_write_block(h, 1, in, sizeof in), SY_OK);
  uint32_t pairs[2] = {1, 2};
  CHECK_EQ(sy_transfer(h, d, pairs, sizeof pairs), SY_OK);
  CHECK_EQ(sy_pool_read_block(d, 2, out, sizeof out), SY_OK);
  CHECK(memcmp(in, out, sizeof in) == 0);
  sy_pool_destroy(d), sy_pool_destroy(h);

  sy_layout l = test_layout(SY_LAYOUT_FULLY_CONTIGUOUS);
  path = temp_path("nodirect");
  d = sy_pool_create(SY_POOL_DISK, SY_BACKEND_CPU, &l, sizeof l, 2, path, strlen(path), SY_DISK_UNLINK_ON_CLOSE | SY_DISK_NO_DIRECT);
  CHECK_EQ(sy_pool_info(d, info, sizeof info), SY_OK);
  CHECK_EQ(info[10], 0);
  sy_pool_destroy(d);
}

static void disallowed_directions_are_refused(void) {
  uint32_t kinds[3] = {SY_POOL_DEVICE, SY_POOL_HOST, SY_POOL_DISK};
  uint32_t pairs[2] = {0, 0};
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      int allowed = 0;
      for (int d = 0; d < 5; d++) allowed |= directions[d][0] == kinds[a] && directions[d][1] == kinds[b];
      if (allowed) continue;
      int32_t src = pool_of(kinds[a], 0, 2, "a");
      int32_t dst = pool_of(kinds[b], 0, 2, "b");
      CHECK_EQ(sy_transfer(src, dst, pairs, sizeof pairs), SY_E_DIRECTION);
      CHECK_ERR("invalid transfer type");
      CHECK_EQ(sy_transfer_submit(src, dst, pairs, sizeof pairs), SY_E_DIRECTION);
      CHECK_EQ(sy_transfer(src, src, pairs, sizeof pairs), SY_E_DIRECTION); /* a pool to itself */
      sy_pool_destroy(src), sy_pool_destroy(dst);
    }
}

static void bad_requests_are_refused_before_any_copy(void) {
  int32_t h = pool_of(SY_POOL_HOST, 0, 4, "h");
  int32_t d = pool_of(SY_POOL_DEVICE, 0, 2, "d");
  uint8_t before[BLOCK], after[BLOCK];
  fill_pattern(before, BLOCK, 77);
  CHECK_EQ(sy_pool_write_block(d, 0, before, BLOCK), SY_OK);
  /* the last pair is out of range: nothing may be copied, not even the first pair */
  uint32_t pairs[4] = {1, 0, 3, 2};
  CHECK_EQ(sy_transfer(h, d, pairs, sizeof pairs), SY_E_RANGE);
  CHECK_ERR("destination block 2");
  CHECK_EQ(sy_pool_read_block(d, 0, after, BLOCK), SY_OK);
  CHECK(memcmp(before, after, BLOCK) == 0);
  uint32_t from_bad[2] = {4, 0};
  CHECK_EQ(sy_transfer(h, d, from_bad, sizeof from_bad), SY_E_RANGE);
  CHECK_ERR("source block 4");
  uint32_t huge[2] = {UINT32_MAX, UINT32_MAX};
  CHECK_EQ(sy_transfer_submit(h, d, huge, sizeof huge), SY_E_RANGE);
  CHECK_EQ(sy_transfer(h, d, pairs, 12), SY_E_INVALID); /* not whole pairs */
  CHECK_EQ(sy_transfer(h, d, NULL, 8), SY_E_INVALID);
  CHECK_EQ(sy_transfer(h, d, NULL, 0), SY_OK); /* an empty request is a no-op */
  CHECK_EQ(sy_transfer(h, 999, pairs, 8), SY_E_HANDLE);
  CHECK_EQ(sy_transfer(-5, d, pairs, 8), SY_E_HANDLE);
  /* geometry differs */
  sy_layout other = test_layout(0);
  other.inner_dim = 128;
  int32_t o = sy_pool_create(SY_POOL_DEVICE, SY_BACKEND_CPU, &other, sizeof other, 2, NULL, 0, 0);
  uint32_t one[2] = {0, 0};
  CHECK_EQ(sy_transfer(h, o, one, sizeof one), SY_E_LAYOUT);
  CHECK_ERR("geometry");
  sy_pool_destroy(o);
  /* closed pool */
  CHECK_EQ(sy_pool_destroy(d), SY_OK);
  CHECK_EQ(sy_transfer(h, d, one, sizeof one), SY_E_HANDLE);
  CHECK_EQ(sy_transfer_submit(h, d, one, sizeof one), SY_E_HANDLE);
  sy_pool_destroy(h);
}

static void pools_closed_during_a_job_stay_alive_until_it_ends(void) {
  int32_t h = pool_of(SY_POOL_HOST, SY_LAYOUT_LAYER_SEPARATE, 256, "h");
  int32_t disk = pool_of(SY_POOL_DISK, 0, 256, "disk");
  uint32_t pairs[512];
  for (uint32_t i = 0; i < 256; i++) pairs[2 * i] = i, pairs[2 * i + 1] = i;
  int32_t job = sy_transfer_submit(h, disk, pairs, sizeof pairs);
  CHECK(job > 0);
  CHECK_EQ(sy_pool_destroy(h), SY_OK);
  CHECK_EQ(sy_pool_destroy(disk), SY_OK);
  CHECK_EQ(sy_job_wait(job, -1), SY_OK);
}

/* Disk jobs always go to the job threads, so these 16 really overlap. */
static void many_jobs_run_concurrently(void) {
  int32_t h = pool_of(SY_POOL_HOST, SY_LAYOUT_LAYER_SEPARATE_OUTER, 64, "h");
  int32_t d = pool_of(SY_POOL_DISK, 0, 64, "d");
  uint8_t buf[BLOCK], want[BLOCK];
  for (uint32_t b = 0; b < 64; b++) {
    fill_pattern(buf, BLOCK, 1000 + b);
    CHECK_EQ(sy_pool_write_block(h, b, buf, BLOCK), SY_OK);
  }
  int32_t jobs[16];
  for (uint32_t j = 0; j < 16; j++) {
    uint32_t pairs[8];
    for (uint32_t k = 0; k < 4; k++) pairs[2 * k] = 4 * j + k, pairs[2 * k + 1] = 63 - (4 * j + k);
    jobs[j] = sy_transfer_submit(h, d, pairs, sizeof pairs);
    CHECK(jobs[j] > 0);
  }
  int pending_seen = 0;
  for (int j = 15; j >= 0; j--) {
    int32_t st;
    while ((st = sy_job_wait(jobs[j], 100)) == SY_PENDING) pending_seen++;
    CHECK_EQ(st, SY_OK);
  }
  for (uint32_t b = 0; b < 64; b++) {
    fill_pattern(want, BLOCK, 1000 + b);
    CHECK_EQ(sy_pool_read_block(d, 63 - b, buf, BLOCK), SY_OK);
    CHECK(memcmp(buf, want, BLOCK) == 0);
  }
  CHECK_EQ(sy_job_wait(0, 0), SY_E_HANDLE);
  CHECK_EQ(sy_job_wait(h, 0), SY_E_HANDLE); /* a pool handle is not a job handle */
  sy_pool_destroy(h), sy_pool_destroy(d);
}

static void io_errors_come_back_as_status(void) {
  /* a disk pool whose file shrinks behind its back: reads past the end fail cleanly */
  int32_t disk = pool_of(SY_POOL_DISK, 0, 4, "shrink");
  int32_t d = pool_of(SY_POOL_DEVICE, 0, 4, "d");
  CHECK(truncate(temp_path("shrink"), 0) == 0);
  uint32_t pairs[2] = {3, 0};
  CHECK_EQ(sy_transfer(disk, d, pairs, sizeof pairs), SY_E_IO);
  CHECK_ERR("end of file");
  int32_t job = sy_transfer_submit(disk, d, pairs, sizeof pairs);
  CHECK_EQ(sy_job_wait(job, -1), SY_E_IO);
  CHECK_ERR("end of file"); /* the job's message reaches the waiting thread */
  sy_pool_destroy(disk), sy_pool_destroy(d);
}

/* Below 256 KiB a memory copy is done inside submit: the job is finished on return. */
static void small_copies_finish_inside_submit(void) {
  int32_t h = pool_of(SY_POOL_HOST, 0, 64, "h");
  int32_t d = pool_of(SY_POOL_DEVICE, 0, 64, "d");
  uint8_t in[BLOCK], out[BLOCK];
  fill_pattern(in, BLOCK, 4);
  CHECK_EQ(sy_pool_write_block(h, 9, in, BLOCK), SY_OK);
  uint32_t one[2] = {9, 1};
  int32_t job = sy_transfer_submit(h, d, one, sizeof one);
  CHECK(job > 0);
  CHECK_EQ(sy_job_wait(job, 0), SY_OK);
  CHECK_EQ(sy_pool_read_block(d, 1, out, BLOCK), SY_OK);
  CHECK(memcmp(in, out, BLOCK) == 0);
  /* 40 blocks x 8 KiB = 320 KiB: queued; it still finishes */
  uint32_t many[80];
  for (uint32_t i = 0; i < 40; i++) many[2 * i] = i, many[2 * i + 1] = i;
  job = sy_transfer_submit(h, d, many, sizeof many);
  CHECK(job > 0);
  CHECK_EQ(sy_job_wait(job, -1), SY_OK);
  sy_pool_destroy(h), sy_pool_destroy(d);
}

void register_transfer_tests(void) {
  add_test("transfer: small copies finish inside submit", small_copies_finish_inside_submit);
  add_test("transfer: every direction and layout round-trips", every_direction_and_layout_round_trips);
  add_test("transfer: large batches round-trip on the thread pools", large_batches_round_trip_on_the_thread_pools);
  add_test("transfer: big blocks split into parts", big_blocks_split_into_parts);
  add_test("transfer: disk direct I/O is optional", disk_direct_io_is_optional);
  add_test("transfer: disallowed directions are refused", disallowed_directions_are_refused);
  add_test("transfer: bad requests are refused before any copy", bad_requests_are_refused_before_any_copy);
  add_test("transfer: pools closed during a job stay alive until it ends", pools_closed_during_a_job_stay_alive_until_it_ends);
  add_test("transfer: many jobs run concurrently", many_jobs_run_concurrently);
  add_test("transfer: io errors come back as status", io_errors_come_back_as_status);
}
