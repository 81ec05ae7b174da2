/*
 * Reference figures for bench/transfer/run.ts, measured in C on the same machine in the
 * same run: plain single-threaded memcpy over the same working set and block size as the
 * transfer bench, and the cost of one small memcpy.
 *
 *   memcpy-bench <total_bytes> <block_bytes> <small_bytes>
 *
 * Runs as a co-process so its measurements interleave with the library's (the machine is
 * shared and noisy): each input line "whole" or "blocks" runs one timed copy and prints its
 * GB/s; "small" prints the ns of one small_bytes copy (cache-hot, amortised); EOF exits.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s total_bytes block_bytes small_bytes\n", argv[0]);
    return 2;
  }
  size_t total = strtoull(argv[1], NULL, 10), block = strtoull(argv[2], NULL, 10), small = strtoull(argv[3], NULL, 10);
  if (block == 0 || total < block || small == 0 || small * 8 > total) return 2;
  size_t nblocks = total / block;
  uint8_t *src = aligned_alloc(4096, total), *dst = aligned_alloc(4096, total);
  if (!src || !dst) return 3;
  memset(src, 1, total); /* fault every page in before timing */
  memset(dst, 2, total);
  volatile uint8_t sink = 0;
  char line[64];
  setvbuf(stdout, NULL, _IOLBF, 0);
  while (fgets(line, sizeof line, stdin)) {
    if (strncmp(line, "whole", 5) == 0) {
      double t0 = now_s();
      memcpy(dst, src, total);
      printf("%.4f\n", (double)total / (now_s() - t0) / 1e9);
    } else if (strncmp(line, "blocks", 6) == 0) {
      /* the transfer bench's pattern: block i -> block n-1-i */
      double t0 = now_s();
      for (size_t i = 0; i < nblocks; i++) memcpy(dst + (nblocks - 1 - i) * block, src + i * block, block);
      printf("%.4f\n", (double)(nblocks * block) / (now_s() - t0) / 1e9);
    } else if (strncmp(line, "small", 5) == 0) {
      size_t iters = 1000000;
      double t0 = now_s();
      for (size_t i = 0; i < iters; i++) {
        memcpy(dst + (i & 7) * small, src + ((i + 3) & 7) * small, small);
        sink ^= dst[(i & 7) * small];
      }
      printf("%.2f\n", (now_s() - t0) / (double)iters * 1e9);
    } else {
      printf("?\n");
    }
    sink ^= dst[0];
  }
  free(src), free(dst);
  return sink == 0xFF ? 0 : 0;
}
