/*
 * Batch block hashing (spec §2.2, no multimodal): one call hashes every full block; and the
 * rolling sequence hashes over those (spec §2.3), one call per prompt.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "internal.h"

size_t sy_hash_blocks(const uint32_t* tokens, size_t n_tokens, uint32_t block_size, uint64_t seed, uint64_t* out,
                      size_t out_cap) {
  if (block_size == 0) return 0;
  size_t n = n_tokens / block_size;
  if (n == 0) return 0;
  if (tokens == NULL) {
    sy_fail(SY_E_INVALID, "tokens is NULL");
    return SIZE_MAX;
  }
  if (out == NULL || out_cap < n) {
    sy_fail(SY_E_INVALID, "output holds %zu hashes but %zu blocks need hashing", out == NULL ? 0 : out_cap, n);
    return SIZE_MAX;
  }
  size_t bytes = (size_t)block_size * 4u;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* Tokens are already u32 little-endian in memory: hash them in place. */
  for (size_t i = 0; i < n; i++) out[i] = XXH3_64bits_withSeed(tokens + i * block_size, bytes, seed);
#else
  uint8_t* buf = malloc(bytes);
  if (buf == NULL) {
    sy_fail(SY_E_NOMEM, "out of memory");
    return SIZE_MAX;
  }
  for (size_t i = 0; i < n; i++) {
    for (uint32_t t = 0; t < block_size; t++) {
      uint32_t v = tokens[i * block_size + t];
      buf[4 * t] = v & 0xff, buf[4 * t + 1] = (v >> 8) & 0xff, buf[4 * t + 2] = (v >> 16) & 0xff, buf[4 * t + 3] = v >> 24;
    }
    out[i] = XXH3_64bits_withSeed(buf, bytes, seed);
  }
  free(buf);
#endif
  return n;
}

/* The chain seed of the sequence hashes: always 1337 (spec §2.3). */
#define SY_SEQ_SEED 1337u

static inline void put_u64_le(uint8_t* p, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(p, &v, 8);
#else
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}

size_t sy_hash_seq(const uint64_t* blocks, size_t n, uint64_t* out, size_t out_cap) {
  if (n == 0) return 0;
  if (blocks == NULL) {
    sy_fail(SY_E_INVALID, "blocks is NULL");
    return SIZE_MAX;
  }
  if (out == NULL || out_cap < n) {
    sy_fail(SY_E_INVALID, "output holds %zu hashes but %zu sequence hashes are needed", out == NULL ? 0 : out_cap, n);
    return SIZE_MAX;
  }
  /* blocks[i] is read before out[i] is written, so out may be blocks itself. */
  uint64_t prev = blocks[0];
  out[0] = prev;
  uint8_t buf[16];
  for (size_t i = 1; i < n; i++) {
    put_u64_le(buf, prev);
    put_u64_le(buf + 8, blocks[i]);
    prev = XXH3_64bits_withSeed(buf, sizeof buf, SY_SEQ_SEED);
    out[i] = prev;
  }
  return n;
}
