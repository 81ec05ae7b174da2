/* sy_hash_blocks and sy_hash_seq against spec §2.6, and their argument checks. */
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

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

static void seq_spec_vectors(void) {
  uint64_t blocks[2] = {9143094415614847814ull, 12124091508212882195ull};
  uint64_t out[2] = {0};
  CHECK_EQ(sy_hash_seq(blocks, 2, out, 2), 2);
  CHECK(out[0] == 9143094415614847814ull && out[1] == 9510318385840434533ull);
  /* in place gives the same chain */
  CHECK_EQ(sy_hash_seq(blocks, 2, blocks, 2), 2);
  CHECK(blocks[0] == out[0] && blocks[1] == out[1]);
  /* the chain is a prefix function: a longer input starts with the shorter one's hashes */
  uint32_t tokens[64];
  for (uint32_t i = 0; i < 64; i++) tokens[i] = i * 2654435761u;
  uint64_t b[16], s16[16], s9[9];
  CHECK_EQ(sy_hash_blocks(tokens, 64, 4, 1337, b, 16), 16);
  CHECK_EQ(sy_hash_seq(b, 16, s16, 16), 16);
  CHECK_EQ(sy_hash_seq(b, 9, s9, 9), 9);
  CHECK(memcmp(s16, s9, sizeof s9) == 0);
  /* and each step is XXH3(prev ‖ block, 1337) over 16 little-endian bytes */
  for (int i = 1; i < 16; i++) {
    uint8_t buf[16];
    for (int k = 0; k < 8; k++) buf[k] = (uint8_t)(s16[i - 1] >> (8 * k)), buf[8 + k] = (uint8_t)(b[i] >> (8 * k));
    CHECK(s16[i] == XXH3_64bits_withSeed(buf, 16, 1337));
  }
}

static void seq_bad_arguments_write_nothing(void) {
  uint64_t blocks[3] = {1, 2, 3};
  uint64_t out[3] = {5, 5, 5};
  CHECK_EQ(sy_hash_seq(blocks, 0, NULL, 0), 0); /* empty input: empty output */
  CHECK_EQ(sy_hash_seq(NULL, 0, out, 3), 0);
  CHECK(sy_hash_seq(blocks, 3, out, 2) == SIZE_MAX);
  CHECK_ERR("3 sequence hashes");
  CHECK(out[0] == 5 && out[1] == 5);
  CHECK(sy_hash_seq(NULL, 3, out, 3) == SIZE_MAX);
  CHECK_ERR("blocks is NULL");
  CHECK(sy_hash_seq(blocks, 3, NULL, 3) == SIZE_MAX);
  CHECK(out[0] == 5);
  /* one block: the chain is the block itself */
  CHECK_EQ(sy_hash_seq(blocks, 1, out, 1), 1);
  CHECK(out[0] == 1 && out[1] == 5);
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
  add_test("hash: sequence hashes (spec 2.6, in place, prefix, definition)", seq_spec_vectors);
  add_test("hash: sequence hash bad arguments write nothing", seq_bad_arguments_write_nothing);
  add_test("library: abi version and runtime status", library_identity);
}
