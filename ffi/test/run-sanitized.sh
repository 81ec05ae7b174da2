#!/usr/bin/env bash
# Builds the library's sources together with the C tests under AddressSanitizer and
# UndefinedBehaviorSanitizer (a separate build: ffi/build/sanitized/) and runs them. Every
# test runs in its own forked child. The last line is the summary:
#   native tests: N passed, M failed
# Exit status 0 only when all passed (a sanitizer report fails its test).
set -euo pipefail
cd "$(dirname "$0")/../.."

CC=${CC:-gcc}
OUT=ffi/build/sanitized
mkdir -p "$OUT"
if ! echo '#include <xxhash.h>' | "$CC" -E -x c - >/dev/null 2>&1; then
  echo "run-sanitized: xxhash.h not found; install libxxhash-dev" >&2
  exit 1
fi

BIN="$OUT/native-tests"
# Rebuilt only when a source (or this script) is newer than the binary.
if [ ! -f "$BIN" ] || [ -n "$(find ffi/src ffi/include ffi/test -newer "$BIN" 2>/dev/null | head -n 1)" ]; then
  tmp=$(mktemp "$OUT/.native-tests.XXXXXX")
  "$CC" -std=gnu11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -pthread \
    -fsanitize=address,undefined -fno-sanitize-recover=all \
    -Wall -Wextra -Wno-unused-parameter -Werror \
    -o "$tmp" ffi/src/*.c ffi/test/*.c -ldl
  mv -f "$tmp" "$BIN"
fi

# libcudart is opened (to learn there is no GPU); what it keeps for the process lifetime is
# not ours to free, so LeakSanitizer is told to ignore it.
SUPP="$OUT/lsan.supp"
printf 'leak:libcudart\nleak:libcuda\n' > "$SUPP"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:allocator_may_return_null=1:exitcode=23}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=24}
export LSAN_OPTIONS="suppressions=$PWD/$SUPP"
export SY_TEST_DIR=${SY_TEST_DIR:-${TMPDIR:-/tmp}}
exec "$BIN" "$@"
