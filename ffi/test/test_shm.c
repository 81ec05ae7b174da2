/* Shared-memory pools: one writer, read-only readers in other processes, every refusal. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const char* seg_name(const char* tag) {
  static char name[128];
  snprintf(name, sizeof name, "sy-test-%d-%s", (int)getpid(), tag);
  return name;
}

static bool seg_exists(const char* name) {
  char path[256];
  snprintf(path, sizeof path, "/dev/shm/%s", name);
  struct stat st;
  return stat(path, &st) == 0;
}

static void writer_then_reader_in_another_process(void) {
  for (uint32_t layout = 0; layout <= SY_LAYOUT_LAYER_SEPARATE_OUTER; layout++) {
    const char* name = seg_name("rt");
    sy_layout l = test_layout(layout);
    int32_t w = sy_shm_pool_create(name, strlen(name), &l, sizeof l, 6);
    CHECK(w > 0);
    uint8_t in[8192], out[8192];
    for (uint64_t b = 0; b < 6; b++) {
      fill_pattern(in, sizeof in, (uint32_t)(b * 7 + layout));
      CHECK_EQ(sy_pool_write_block(w, b, in, sizeof in), SY_OK);
    }
    uint64_t info[SY_POOL_INFO_FIELDS];
    CHECK_EQ(sy_pool_info(w, info, sizeof info), SY_OK);
    CHECK_EQ(info[0], SY_POOL_SHM);
    CHECK_EQ(sy_pool_destroy(w), SY_OK); /* the segment outlives the writer's mapping */
    CHECK(seg_exists(name));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      int32_t r = sy_shm_pool_open(name, strlen(name), &l, sizeof l);
      CHECK(r > 0);
      CHECK_EQ(sy_pool_info(r, info, sizeof info), SY_OK);
      CHECK_EQ(info[2], 6);
      for (uint64_t b = 0; b < 6; b++) {
        fill_pattern(in, sizeof in, (uint32_t)(b * 7 + layout));
        CHECK_EQ(sy_pool_read_block(r, b, out, sizeof out), SY_OK);
        CHECK(memcmp(in, out, sizeof in) == 0);
      }
      /* pulled into a device pool with a batched transfer: shm counts as host */
      int32_t dev = make_pool(SY_POOL_DEVICE, layout, 4, NULL);
      uint32_t pairs[] = {5, 0, 2, 3};
      CHECK_EQ(sy_transfer(r, dev, pairs, sizeof pairs), SY_OK);
      fill_pattern(in, sizeof in, (uint32_t)(5 * 7 + layout));
      CHECK_EQ(sy_pool_read_block(dev, 0, out, sizeof out), SY_OK);
      CHECK(memcmp(in, out, sizeof in) == 0);
      fill_pattern(in, sizeof in, (uint32_t)(2 * 7 + layout));
      CHECK_EQ(sy_pool_read_block(dev, 3, out, sizeof out), SY_OK);
      CHECK(memcmp(in, out, sizeof in) == 0);
      int32_t job = sy_transfer_submit(r, dev, pairs, sizeof pairs);
      CHECK(job > 0);
      CHECK_EQ(sy_job_wait(job, -1), SY_OK);
      sy_pool_destroy(dev);
      CHECK_EQ(sy_pool_destroy(r), SY_OK);
      exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(sy_shm_unlink(name, strlen(name)), SY_OK);
    CHECK(!seg_exists(name));
  }
}

static void readers_cannot_write(void) {
  const char* name = seg_name("ro");
  sy_layout l = test_layout(SY_LAYOUT_FULLY_CONTIGUOUS);
  int32_t w = sy_shm_pool_create(name, strlen(name), &l, sizeof l, 2);
  CHECK(w > 0);
  int32_t r = sy_shm_pool_open(name, strlen(name), &l, sizeof l);
  CHECK(r > 0);
  uint8_t buf[8192] = {0};
  CHECK_EQ(sy_pool_write_block(r, 0, buf, sizeof buf), SY_E_READ_ONLY);
  int32_t dev = make_pool(SY_POOL_DEVICE, SY_LAYOUT_FULLY_CONTIGUOUS, 2, NULL);
  uint32_t pairs[] = {0, 0};
  CHECK_EQ(sy_transfer(dev, r, pairs, sizeof pairs), SY_E_READ_ONLY);
  CHECK_EQ(sy_transfer_submit(dev, r, pairs, sizeof pairs), SY_E_READ_ONLY);
  /* the writer may be a transfer destination (device -> shm) */
  CHECK_EQ(sy_transfer(dev, w, pairs, sizeof pairs), SY_OK);
  /* host <-> shm are both host memory: not a seed-003 direction */
  int32_t host = make_pool(SY_POOL_HOST, SY_LAYOUT_FULLY_CONTIGUOUS, 2, NULL);
  CHECK_EQ(sy_transfer(r, host, pairs, sizeof pairs), SY_E_DIRECTION);
  CHECK_ERR("shared-memory");
  /* out-of-range indices are refused before any byte moves */
  uint32_t bad[] = {2, 0};
  CHECK_EQ(sy_transfer(r, dev, bad, sizeof bad), SY_E_RANGE);
  CHECK_EQ(sy_pool_read_block(r, 2, buf, sizeof buf), SY_E_RANGE);
  sy_pool_destroy(host), sy_pool_destroy(dev), sy_pool_destroy(r), sy_pool_destroy(w);
  CHECK_EQ(sy_shm_unlink(name, strlen(name)), SY_OK);
}

static void missing_mismatched_and_truncated_segments(void) {
  const char* name = seg_name("bad");
  sy_layout l = test_layout(SY_LAYOUT_FULLY_CONTIGUOUS);
  CHECK_EQ(sy_shm_pool_open(name, strlen(name), &l, sizeof l), SY_E_NOT_FOUND);
  CHECK_EQ(sy_shm_unlink(name, strlen(name)), SY_E_NOT_FOUND);
  int32_t w = sy_shm_pool_create(name, strlen(name), &l, sizeof l, 3);
  CHECK(w > 0);
  CHECK_EQ(sy_shm_pool_create(name, strlen(name), &l, sizeof l, 3), SY_E_INVALID); /* one writer */
  CHECK_ERR("already exists");
  sy_layout other = l;
  other.page_size = 8;
  CHECK_EQ(sy_shm_pool_open(name, strlen(name), &other, sizeof other), SY_E_LAYOUT);
  other = l, other.kind = SY_LAYOUT_LAYER_SEPARATE;
  CHECK_EQ(sy_shm_pool_open(name, strlen(name), &other, sizeof other), SY_E_LAYOUT);
  sy_pool_destroy(w);
  /* a segment cut short (or never initialised) is refused, never mapped past its end */
  char path[256];
  snprintf(path, sizeof path, "/%s", name);
  int fd = shm_open(path, O_RDWR, 0);
  CHECK(fd >= 0);
  CHECK(ftruncate(fd, 4096 + 8192) == 0);
  close(fd);
  CHECK_EQ(sy_shm_pool_open(name, strlen(name), &l, sizeof l), SY_E_INVALID);
  CHECK_ERR("its header says");
  CHECK_EQ(sy_shm_unlink(name, strlen(name)), SY_OK);
  const char* junk = seg_name("junk");
  snprintf(path, sizeof path, "/%s", junk);
  fd = shm_open(path, O_RDWR | O_CREAT, 0600);
  CHECK(fd >= 0);
  CHECK(ftruncate(fd, 100) == 0);
  close(fd);
  CHECK_EQ(sy_shm_pool_open(junk, strlen(junk), &l, sizeof l), SY_E_INVALID);
  fd = shm_open(path, O_RDWR, 0);
  CHECK(fd >= 0 && ftruncate(fd, 8192) == 0);
  close(fd);
  CHECK_EQ(sy_shm_pool_open(junk, strlen(junk), &l, sizeof l), SY_E_INVALID);
  CHECK_ERR("not a switchyard pool");
  CHECK_EQ(sy_shm_unlink(junk, strlen(junk)), SY_OK);
}

static void names_and_arguments_are_checked(void) {
  sy_layout l = test_layout(SY_LAYOUT_FULLY_CONTIGUOUS);
  CHECK_EQ(sy_shm_pool_create("", 0, &l, sizeof l, 1), SY_E_INVALID);
  CHECK_EQ(sy_shm_pool_create(NULL, 4, &l, sizeof l, 1), SY_E_INVALID);
  CHECK_EQ(sy_shm_pool_create("a/b", 3, &l, sizeof l, 1), SY_E_INVALID);
  CHECK_EQ(sy_shm_pool_create("..", 2, &l, sizeof l, 1), SY_E_INVALID);
  CHECK_EQ(sy_shm_pool_open("a\0b", 3, &l, sizeof l), SY_E_INVALID);
  char longname[300];
  memset(longname, 'a', sizeof longname);
  CHECK_EQ(sy_shm_unlink(longname, sizeof longname), SY_E_INVALID);
  const char* name = seg_name("args");
  CHECK_EQ(sy_shm_pool_create(name, strlen(name), &l, sizeof l - 1, 1), SY_E_INVALID);
  CHECK_EQ(sy_shm_pool_create(name, strlen(name), &l, sizeof l, 0), SY_E_INVALID);
  CHECK_EQ(sy_shm_pool_create(name, strlen(name), &l, sizeof l, 1ull << 40), SY_E_INVALID);
  CHECK(!seg_exists(name));
  /* the generic constructor does not make shared-memory pools */
  CHECK_EQ(sy_pool_create(SY_POOL_SHM, SY_BACKEND_CPU, &l, sizeof l, 1, NULL, 0, 0), SY_E_INVALID);
}

static void cuda_ipc_is_unavailable_without_a_gpu(void) {
  if (sy_capabilities() & SY_CAP_GPU) return; /* exercised only where a GPU is present */
  int32_t dev = make_pool(SY_POOL_DEVICE, SY_LAYOUT_FULLY_CONTIGUOUS, 2, NULL);
  uint8_t h[SY_IPC_HANDLE_BYTES];
  CHECK_EQ(sy_pool_ipc_handle(dev, h, sizeof h), SY_E_UNAVAILABLE);
  CHECK_EQ(sy_pool_ipc_handle(dev, h, 3), SY_E_INVALID);
  CHECK_EQ(sy_pool_ipc_handle(9999, h, sizeof h), SY_E_HANDLE);
  sy_layout l = test_layout(SY_LAYOUT_FULLY_CONTIGUOUS);
  memset(h, 0, sizeof h);
  CHECK_EQ(sy_pool_open_ipc(h, sizeof h, &l, sizeof l, 2), SY_E_UNAVAILABLE);
  CHECK_EQ(sy_pool_open_ipc(h, 10, &l, sizeof l, 2), SY_E_INVALID);
  sy_pool_destroy(dev);
}

void register_shm_tests(void) {
  add_test("shm: writer then reader in another process, every layout", writer_then_reader_in_another_process);
  add_test("shm: readers cannot write", readers_cannot_write);
  add_test("shm: missing, mismatched and truncated segments", missing_mismatched_and_truncated_segments);
  add_test("shm: names and arguments are checked", names_and_arguments_are_checked);
  add_test("shm: CUDA IPC is unavailable without a GPU", cuda_ipc_is_unavailable_without_a_gpu);
}
