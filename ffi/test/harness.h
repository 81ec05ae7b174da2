/* A tiny test harness: every test runs in a forked child, so a crash fails one test. */
#ifndef SY_TEST_HARNESS_H
#define SY_TEST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/switchyard.h"

#define CHECK(cond)                                                                                       \
  do {                                                                                                    \
    if (!(cond)) {                                                                                        \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, sy_last_error()); \
      exit(1);                                                                                            \
    }                                                                                                     \
  } while (0)

#define CHECK_EQ(a, b)                                                                                    \
  do {                                                                                                    \
    long long va_ = (long long)(a), vb_ = (long long)(b);                                                 \
    if (va_ != vb_) {                                                                                     \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld (last error: %s)\n", __FILE__, __LINE__, #a, #b, va_, vb_, \
              sy_last_error());                                                                           \
      exit(1);                                                                                            \
    }                                                                                                     \
  } while (0)

/* The error message must mention `needle`. */
#define CHECK_ERR(needle) CHECK(strstr(sy_last_error(), (needle)) != NULL)

void add_test(const char* name, void (*fn)(void));

void register_hash_tests(void);
void register_pool_tests(void);
void register_transfer_tests(void);
void register_group_tests(void);
void register_shm_tests(void);

/* Helpers shared by the test files. */
sy_layout test_layout(uint32_t kind);
int32_t make_pool(uint32_t kind, uint32_t layout_kind, uint64_t blocks, const char* disk_path);
void fill_pattern(uint8_t* buf, size_t n, uint32_t seed);
const char* temp_path(const char* tag);

#endif
