/* Errors: a status code is returned, the message is kept per thread for sy_last_error(). */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define SY_ERROR_CAP 512

static _Thread_local char error_text[SY_ERROR_CAP];

int32_t sy_fail(int32_t status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error_text, sizeof error_text, fmt, ap);
  va_end(ap);
  return status;
}

void sy_clear_error(void) { error_text[0] = '\0'; }

const char* sy_error_text(void) { return error_text; }

void sy_set_error_text(const char* text) { snprintf(error_text, sizeof error_text, "%s", text ? text : ""); }

const char* sy_last_error(void) { return error_text; }

uint32_t sy_abi_version(void) { return SY_ABI_VERSION; }

int32_t sy_copy_string(const char* s, size_t len, size_t max_len, const char* what, char** out) {
  *out = NULL;
  if (s == NULL || len == 0) return sy_fail(SY_E_INVALID, "%s is empty", what);
  if (len > max_len) return sy_fail(SY_E_INVALID, "%s is longer than %zu bytes", what, max_len);
  if (memchr(s, '\0', len) != NULL) return sy_fail(SY_E_INVALID, "%s contains a NUL byte", what);
  char* copy = malloc(len + 1);
  if (copy == NULL) return sy_fail(SY_E_NOMEM, "out of memory copying %s", what);
  memcpy(copy, s, len);
  copy[len] = '\0';
  *out = copy;
  return SY_OK;
}

uint64_t sy_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
