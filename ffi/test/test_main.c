/* Runs every registered test in its own child process; prints one summary line. */
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MAX_TESTS 256

static struct {
  const char* name;
  void (*fn)(void);
} tests[MAX_TESTS];
static int ntests;

void add_test(const char* name, void (*fn)(void)) {
  if (ntests < MAX_TESTS) tests[ntests].name = name, tests[ntests].fn = fn, ntests++;
}

sy_layout test_layout(uint32_t kind) {
  /* 2 layers x K/V x 4 tokens x 256 elements x 2 bytes: 2 KiB chunks, 8 KiB blocks */
  sy_layout l = {kind, 2, 2, 4, 256, 2};
  return l;
}

int32_t make_pool(uint32_t kind, uint32_t layout_kind, uint64_t blocks, const char* disk_path) {
  sy_layout l = test_layout(layout_kind);
  return sy_pool_create(kind, SY_BACKEND_CPU, &l, sizeof l, blocks, disk_path, disk_path ? strlen(disk_path) : 0,
                        SY_DISK_UNLINK_ON_CLOSE);
}

void fill_pattern(uint8_t* buf, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    buf[i] = (uint8_t)x;
  }
}

const char* temp_path(const char* tag) {
  static char path[256];
  const char* dir = getenv("SY_TEST_DIR");
  snprintf(path, sizeof path, "%s/sy-test-%d-%s.bin", dir && *dir ? dir : "/tmp", (int)getpid(), tag);
  return path;
}

int main(int argc, char** argv) {
  register_hash_tests();
  register_pool_tests();
  register_transfer_tests();
  register_group_tests();
  register_shm_tests();
  int passed = 0, failed = 0;
  for (int i = 0; i < ntests; i++) {
    if (argc > 1 && strstr(tests[i].name, argv[1]) == NULL) continue;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      tests[i].fn();
      exit(0); /* exit, not _exit: sanitizers (LeakSanitizer too) report at exit */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok) {
      passed++;
      printf("ok   %s\n", tests[i].name);
    } else {
      failed++;
      if (WIFSIGNALED(status)) printf("FAIL %s (signal %d)\n", tests[i].name, WTERMSIG(status));
      else printf("FAIL %s (exit %d)\n", tests[i].name, WEXITSTATUS(status));
    }
  }
  printf("native tests: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
