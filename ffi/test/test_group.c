/* Replication groups: ranks are forked processes sharing the POSIX shared-memory collective. */
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define BLOCK 8192
#define WORLD 3

static char group_name[64];

static const char* unique_name(const char* tag) {
  snprintf(group_name, sizeof group_name, "t%d-%s", (int)getpid(), tag);
  return group_name;
}

static int32_t join(const char* name, int rank, int world, int64_t timeout_ms) {
  return sy_group_create(name, strlen(name), rank, world, timeout_ms, SY_GROUP_CPU_ONLY);
}

/* Runs body(rank) in `world` forked processes; every one must exit 0. */
static void run_ranks(int world, void (*body)(int rank)) {
  pid_t pids[16];
  for (int r = 0; r < world; r++) {
    fflush(NULL);
    pids[r] = fork();
    if (pids[r] == 0) {
      body(r);
      exit(0);
    }
  }
  int failed = 0;
  for (int r = 0; r < world; r++) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", r, status);
      failed = 1;
    }
  }
  CHECK(!failed);
}

/* Each rank uses its own layout: the broadcast carries blocks in logical order. */
static int32_t rank_pool(int rank, uint32_t blocks) {
  int32_t p = make_pool(SY_POOL_DEVICE, (uint32_t)rank % 3, blocks, NULL);
  CHECK(p > 0);
  return p;
}

static void check_blocks(int32_t pool, const uint32_t* idx, size_t n, uint32_t seed_base) {
  static uint8_t want[BLOCK], got[BLOCK];
  for (size_t i = 0; i < n; i++) {
    fill_pattern(want, BLOCK, seed_base + idx[i]);
    CHECK_EQ(sy_pool_read_block(pool, idx[i], got, BLOCK), SY_OK);
    CHECK(memcmp(want, got, BLOCK) == 0);
  }
}

static void broadcast_body(int rank) {
  int32_t g = join(group_name, rank, WORLD, 10000);
  CHECK(g > 0);
  CHECK_EQ(sy_group_uses_nccl(g), 0);
  const uint32_t blocks = 1100; /* 8.6 MiB: more than one round through the 8 MiB window */
  int32_t pool = rank_pool(rank, blocks);
  static uint8_t buf[BLOCK];
  for (uint32_t b = 0; b < blocks; b++) {
    fill_pattern(buf, BLOCK, (rank == 0 ? 0 : 50000 * rank) + b);
    CHECK_EQ(sy_pool_write_block(pool, b, buf, BLOCK), SY_OK);
  }
  uint32_t small[3] = {7, 2, 11};
  CHECK_EQ(sy_group_bcast(g, pool, small, sizeof small), SY_OK);
  check_blocks(pool, small, 3, 0);
  if (rank != 0) { /* blocks outside the list keep this rank's own bytes */
    uint32_t other = 3;
    check_blocks(pool, &other, 1, 50000 * (uint32_t)rank);
  }
  CHECK_EQ(sy_group_bcast(g, pool, NULL, 0), SY_OK); /* empty: still in step */
  uint32_t* all = malloc(sizeof(uint32_t) * blocks);
  for (uint32_t b = 0; b < blocks; b++) all[b] = b;
  int32_t job = sy_group_bcast_submit(g, pool, all, sizeof(uint32_t) * blocks);
  CHECK(job > 0);
  CHECK_EQ(sy_job_wait(job, -1), SY_OK);
  check_blocks(pool, all, blocks, 0);
  free(all);
  CHECK_EQ(sy_group_barrier(g), SY_OK);
  CHECK_EQ(sy_group_destroy(g), SY_OK);
  CHECK_EQ(sy_pool_destroy(pool), SY_OK);
}

static void three_ranks_end_with_rank0_bytes(void) {
  unique_name("bcast");
  run_ranks(WORLD, broadcast_body);
}

static void mismatch_body(int rank) {
  int32_t g = join(group_name, rank, WORLD, 5000);
  CHECK(g > 0);
  int32_t pool = rank_pool(rank, 8);
  uint32_t idx[3] = {1, 2, 3};
  int32_t st = sy_group_bcast(g, pool, idx, rank == 2 ? 8 : 12); /* rank 2 asks for fewer */
  if (rank == 2) {
    CHECK_EQ(st, SY_E_COLLECTIVE);
    CHECK_ERR("rank 0 sent");
  }
  /* whoever was not told yet learns at the next collective: the group is aborted */
  st = sy_group_barrier(g);
  CHECK_EQ(st, SY_E_COLLECTIVE);
  sy_group_destroy(g);
  sy_pool_destroy(pool);
}

static void mismatched_requests_abort_every_rank(void) {
  unique_name("mismatch");
  run_ranks(WORLD, mismatch_body);
}

static void rank_and_world_invariants_are_checked(void) {
  const char* n = unique_name("inv");
  CHECK_EQ(join(n, -1, 3, 100), SY_E_INVALID);
  CHECK_ERR("0 <= rank < world");
  CHECK_EQ(join(n, 3, 3, 100), SY_E_INVALID);
  CHECK_EQ(join(n, 0, 0, 100), SY_E_INVALID);
  CHECK_EQ(join(n, 0, 65, 100), SY_E_INVALID);
  CHECK_EQ(join("a/b", 0, 1, 100), SY_E_INVALID);
  CHECK_EQ(sy_group_create(n, 0, 0, 1, 100, 0), SY_E_INVALID);
  CHECK_EQ(sy_group_create(NULL, 5, 0, 1, 100, 0), SY_E_INVALID);
  CHECK_EQ(join(n, 0, 1, -1), SY_E_INVALID);
  CHECK_EQ(sy_group_create(n, strlen(n), 0, 1, 100, 0x80), SY_E_INVALID);
  CHECK_EQ(sy_group_barrier(12345), SY_E_HANDLE);
  CHECK_EQ(sy_group_destroy(-3), SY_E_HANDLE);
}

static void a_group_of_one_works(void) {
  int32_t g = join(unique_name("solo"), 0, 1, 1000);
  CHECK(g > 0);
  int32_t pool = rank_pool(0, 4);
  uint32_t idx[2] = {0, 3};
  CHECK_EQ(sy_group_bcast(g, pool, idx, sizeof idx), SY_OK);
  CHECK_EQ(sy_group_barrier(g), SY_OK);
  /* argument checks */
  uint32_t bad[1] = {4};
  CHECK_EQ(sy_group_bcast(g, pool, bad, sizeof bad), SY_E_RANGE);
  CHECK_EQ(sy_group_bcast(g, pool, idx, 6), SY_E_INVALID);
  CHECK_EQ(sy_group_bcast(g, pool, NULL, 4), SY_E_INVALID);
  CHECK_EQ(sy_group_bcast(g, 777, idx, sizeof idx), SY_E_HANDLE);
  CHECK_EQ(sy_group_bcast(pool, pool, idx, sizeof idx), SY_E_HANDLE); /* a pool is not a group */
  int32_t disk = make_pool(SY_POOL_DISK, 0, 4, temp_path("g"));
  CHECK_EQ(sy_group_bcast(g, disk, idx, sizeof idx), SY_E_INVALID);
  CHECK_ERR("memory pool");
  sy_pool_destroy(disk);
  CHECK_EQ(sy_group_destroy(g), SY_OK);
  CHECK_EQ(sy_group_bcast(g, pool, idx, sizeof idx), SY_E_HANDLE);
  sy_pool_destroy(pool);
}

static void missing_peers_time_out(void) {
  uint64_t t0 = (uint64_t)time(NULL);
  CHECK_EQ(join(unique_name("lonely"), 0, 2, 300), SY_E_TIMEOUT);
  CHECK_ERR("timed out");
  CHECK_EQ(join(unique_name("norank0"), 1, 2, 300), SY_E_TIMEOUT);
  CHECK_ERR("did not create");
  CHECK((uint64_t)time(NULL) - t0 < 10);
}

static void dup_body(int rank) {
  if (rank == 0) { /* holds the name while waiting (in vain) for rank 1 */
    CHECK_EQ(join(group_name, 0, 2, 600), SY_E_TIMEOUT);
    return;
  }
  char path[128];
  snprintf(path, sizeof path, "/dev/shm/sy-%s", group_name);
  struct stat st;
  for (int i = 0; i < 1000 && stat(path, &st) != 0; i++) usleep(1000);
  CHECK_EQ(join(group_name, 0, 2, 200), SY_E_COLLECTIVE); /* a second rank 0 */
  CHECK_ERR("already exists");
}

static void a_second_rank0_is_refused(void) {
  unique_name("dup");
  run_ranks(2, dup_body);
}

void register_group_tests(void) {
  add_test("group: three ranks end with rank 0's bytes", three_ranks_end_with_rank0_bytes);
  add_test("group: mismatched requests abort every rank", mismatched_requests_abort_every_rank);
  add_test("group: rank and world invariants are checked", rank_and_world_invariants_are_checked);
  add_test("group: a group of one works, and checks its arguments", a_group_of_one_works);
  add_test("group: missing peers time out", missing_peers_time_out);
  add_test("group: a second rank 0 is refused", a_second_rank0_is_refused);
}
