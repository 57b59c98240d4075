#!/usr/bin/env bash
# The C API tested from C: builds rustlib's static library (cargo --locked,
# debug profile: overflow checks and debug assertions on), checks that cb3.h
# compiles on its own as C99/C11 and as C++ with every warning an error,
# compiles the programs in tests/c with AddressSanitizer + UndefinedBehavior-
# Sanitizer (gcc's runtime), runs them, and exits non-zero on any failed check
# or sanitizer report. tests/api/test_c_api.py runs this script under pytest.
#
# Environment: CC (gcc), CXX (g++), CARGO (cargo), CB3_C_TARGET_DIR (cargo's
# target dir, default rustlib/target), RUSTFLAGS (merged with rustlib's own by
# rustlib/rustflags.py, run with PYTHON, default python3). The sanitizer runtimes come with gcc
# (Debian: libasan8, libubsan1).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUSTLIB=$ROOT/rustlib
INCLUDE=$RUSTLIB/include
CC=${CC:-gcc}
CXX=${CXX:-g++}
CARGO=${CARGO:-cargo}
TARGET_DIR=${CB3_C_TARGET_DIR:-$RUSTLIB/target}
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/cb3-c-tests.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT

# What a Rust static library needs from the system (cargo's
# --print native-static-libs; cb3.get_link_args() returns the same list).
NATIVE_LIBS=(-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc)
WARNINGS=(-Wall -Wextra -Werror -pedantic)
SANITIZE=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}"

failures=0
fail() {
    echo "FAILED: $*"
    failures=$((failures + 1))
}
step() { echo "== $*"; }

step "cargo build --locked --lib (rustlib, debug)"
env=()
if [[ -n "${RUSTFLAGS:-}" ]]; then # RUSTFLAGS replaces rustlib/.cargo/config.toml's rustflags: add them
    env=(RUSTFLAGS="$("${PYTHON:-python3}" "$RUSTLIB/rustflags.py")")
fi
(cd "$RUSTLIB" && env ${env[@]+"${env[@]}"} "$CARGO" build --locked --lib --target-dir "$TARGET_DIR")
LIB=$TARGET_DIR/debug/libcb3.a
[[ -f $LIB ]] || { echo "no static library at $LIB"; exit 1; }

step "cb3.h compiles alone as C and C++ (${WARNINGS[*]})"
for std in c99 c11; do
    "$CC" -std=$std -fsyntax-only "${WARNINGS[@]}" -Wstrict-prototypes -Wundef -x c "$INCLUDE/cb3.h" ||
        fail "cb3.h as $std"
done
for std in c++11 c++17 c++20; do
    "$CXX" -std=$std -fsyntax-only "${WARNINGS[@]}" -Wundef -x c++ "$INCLUDE/cb3.h" || fail "cb3.h as $std"
done
# The default dialects too, as the brief's one-liners use them.
"$CC" -std=c99 -fsyntax-only "${WARNINGS[@]}" "$INCLUDE/cb3.h" || fail "gcc -std=c99 -fsyntax-only cb3.h"
"$CXX" -fsyntax-only -x c++ "${WARNINGS[@]}" "$INCLUDE/cb3.h" || fail "g++ -fsyntax-only -x c++ cb3.h"

step "sanitizer self-test (a leaked cb3_aead must be reported)"
cat >"$BUILD/leak.c" <<'EOF'
#include <stdint.h>
#include "cb3.h"
static void leak(void) { uint8_t key[32] = {0}; cb3_aead *aead = NULL; cb3_aead_new(key, 32, &aead); aead = NULL; }
/* LeakSanitizer scans the stack conservatively: wipe the stale copies. */
static void scrub(void) { volatile uint8_t stack[65536]; for (size_t i = 0; i < sizeof stack; i++) stack[i] = 0; }
int main(void) { leak(); scrub(); return 0; }
EOF
"$CC" -std=c99 -O0 -g "${SANITIZE[@]}" -I"$INCLUDE" "$BUILD/leak.c" "$LIB" "${NATIVE_LIBS[@]}" -o "$BUILD/leak" ||
    { echo "cannot build with -fsanitize=address,undefined: install gcc's sanitizer runtimes (libasan8 libubsan1)"; exit 1; }
if ASAN_OPTIONS="$ASAN_OPTIONS:abort_on_error=0" "$BUILD/leak" >"$BUILD/leak.log" 2>&1 || ! grep -q "LeakSanitizer: detected memory leaks" "$BUILD/leak.log"; then
    cat "$BUILD/leak.log"
    fail "LeakSanitizer did not report a leak: the sanitizers are not working here"
fi

run() { # name, then the compile command
    local name=$1
    shift
    step "$name"
    if ! "$@"; then
        fail "$name: compile"
        return
    fi
    [[ $(nm "$BUILD/$name") == *__asan_init* ]] || fail "$name: not built with AddressSanitizer"
    local status=0
    timeout 600 "$BUILD/$name" 2>"$BUILD/$name.stderr" || status=$?
    cat "$BUILD/$name.stderr" >&2
    if ((status != 0)); then
        fail "$name: exit status $status"
    elif grep -Eq "runtime error:|ERROR: (Address|Leak)Sanitizer|SUMMARY: (Address|UndefinedBehavior)Sanitizer" \
        "$BUILD/$name.stderr"; then
        fail "$name: sanitizer report"
    fi
}

for program in test_aead test_stream test_chunked test_misc test_hash test_chacha test_objects test_kdf; do
    run "$program" "$CC" -std=c99 "${WARNINGS[@]}" -O1 -g "${SANITIZE[@]}" -pthread -I"$INCLUDE" \
        "$HERE/$program.c" "$LIB" "${NATIVE_LIBS[@]}" -o "$BUILD/$program"
done
run test_cxx "$CXX" -std=c++11 "${WARNINGS[@]}" -O1 -g "${SANITIZE[@]}" -I"$INCLUDE" \
    "$HERE/test_cxx.cpp" "$LIB" "${NATIVE_LIBS[@]}" -o "$BUILD/test_cxx"

if ((failures)); then
    echo "tests/c: $failures step(s) failed"
    exit 1
fi
echo "tests/c: all passed"
