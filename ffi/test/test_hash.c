/* sy_hash_blocks against spec §2.6 and its argument checks. */
#include <stdint.h>

#include "harness.h"

static void spec_vectors(void) {
  uint32_t tokens[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  uint64_t out[4] = {0};
  CHECK_EQ(sy_hash_blocks(tokens, 8, 4, 1337, out, 4), 2);
  CHECK(out[0] == 9143094415614847814ull && out[1] == 12124091508212882195ull);
  /* the trailing partial block is dropped */
  CHECK_EQ(sy_hash_blocks(tokens, 9, 4, 1337, out, 2), 2);
  /* lora "adapter-a": seed 1337 + XXH3("adapter-a", 0) */
  CHECK_EQ(sy_hash_blocks(tokens, 4, 4, 8842669519798868182ull, out, 1), 1);
  CHECK(out[0] == 6665157333201000639ull);
}

static void zero_and_short_inputs(void) {
  uint32_t tokens[3] = {1, 2, 3};
  uint64_t out[1] = {7};
  CHECK_EQ(sy_hash_blocks(tokens, 3, 0, 1337, out, 1), 0); /* block size 0: no blocks */
  CHECK_EQ(sy_hash_blocks(tokens, 3, 4, 1337, out, 1), 0); /* shorter than one block */
  CHECK_EQ(sy_hash_blocks(NULL, 0, 4, 1337, NULL, 0), 0);
  CHECK(out[0] == 7);
}

static void bad_arguments_write_nothing(void) {
  uint32_t tokens[8] = {0};
  uint64_t out[2] = {5, 5};
  CHECK(sy_hash_blocks(tokens, 8, 4, 1337, out, 1) == SIZE_MAX);
  CHECK_ERR("2 blocks");
  CHECK(out[0] == 5);
  CHECK(sy_hash_blocks(NULL, 8, 4, 1337, out, 2) == SIZE_MAX);
  CHECK_ERR("tokens is NULL");
  CHECK(sy_hash_blocks(tokens, 8, 4, 1337, NULL, 2) == SIZE_MAX);
}

static void library_identity(void) {
  CHECK_EQ(sy_abi_version(), SY_ABI_VERSION);
  const char* status = sy_runtime_status();
  CHECK(strstr(status, "path: ") != NULL);
  CHECK(strstr(status, "nccl: ") != NULL);
  /* no GPU here or in CI: the CPU path must be the one reported */
  if (!(sy_capabilities() & SY_CAP_GPU)) CHECK(strstr(status, "cpu only") != NULL);
}

void register_hash_tests(void) {
  add_test("hash: spec 2.6 vectors", spec_vectors);
  add_test("hash: zero and short inputs", zero_and_short_inputs);
  add_test("hash: bad arguments write nothing", bad_arguments_write_nothing);
  add_test("library: abi version and runtime status", library_identity);
}
