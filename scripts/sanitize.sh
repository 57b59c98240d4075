#!/usr/bin/env bash
# cb3 under AddressSanitizer + UndefinedBehaviorSanitizer, and under valgrind
# memcheck (docs/security-testing.md):
#   1. tests/c/run.sh: the C API test programs, built with
#      -fsanitize=address,undefined (LeakSanitizer on);
#   2. the extension rebuilt with CFLAGS=-fsanitize=address,undefined into
#      its own venv ($WORK/venv-asan; nm checks the .so is instrumented), and
#      the pytest suite run with gcc's libasan preloaded (CPython itself is
#      not instrumented), PYTHONMALLOC=malloc so that every Python object is
#      an ASan allocation, detect_leaks=0 (CPython does not free everything
#      at exit) and halt_on_error: everything but the slow tests, the two
#      modules that build C code with the compilers (test_c_api runs
#      tests/c/run.sh, step 1; test_downstream) and the two RSS bounds
#      (ASan's quarantine keeps freed memory resident by design);
#   3. valgrind memcheck over the ordinary build (.test/venv): the vectors,
#      the Stream tests and the bad-input matrix, PYTHONMALLOC=malloc,
#      --errors-for-leak-kinds=definite --leak-check=full, suppressions for
#      CPython/glibc/import-time reports in scripts/valgrind-python.supp.
# Any sanitizer report or valgrind error fails the script.
#
# Usage: bash scripts/sanitize.sh    (after scripts/test.sh built .test/venv)
# Environment: CB3_TEST_DIR (default .test), CB3_PYTHON (the ordinary build
# for valgrind; default $CB3_TEST_DIR/venv/bin/python), PYTHON (the
# interpreter for the ASan venv; default python3.11), CB3_SANITIZE_STEPS
# (default "c asan valgrind").
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
WORK="${CB3_TEST_DIR:-$ROOT/.test}"
PY="${CB3_PYTHON:-$WORK/venv/bin/python}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
STEPS=" ${CB3_SANITIZE_STEPS:-c asan valgrind} "
mkdir -p "$WORK"

step() { printf '\n--> %s\n' "$*"; }
wants() { [[ $STEPS == *" $1 "* ]]; }
apt_install() {
    if command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
    else
        echo "cannot install $*: no apt-get" >&2
        exit 1
    fi
}
sanitizer_reports() {  # sanitizer_reports LOG: the reports in LOG, if any
    grep -E "runtime error:|ERROR: (Address|Leak)Sanitizer|SUMMARY: (Address|UndefinedBehavior)Sanitizer" "$1" || true
}

# gcc's sanitizer runtimes (Debian: libasan8, libubsan1 for gcc 12).
LIBASAN=$(gcc -print-file-name=libasan.so)
if [[ $LIBASAN != /* ]] || ! gcc -print-file-name=libubsan.so | grep -q /; then
    step "installing gcc's sanitizer runtimes"
    apt_install libasan8 libubsan1 "libgcc-$(gcc -dumpversion | cut -d. -f1)-dev"
    LIBASAN=$(gcc -print-file-name=libasan.so)
fi
LIBASAN=$(readlink -f "$LIBASAN")

if wants c && [[ -f tests/c/run.sh ]]; then
    step "C API programs under ASan + UBSan + LSan (tests/c/run.sh)"
    bash tests/c/run.sh | tail -8
fi

if wants asan; then
    step "ASan + UBSan: build the extension instrumented ($WORK/venv-asan)"
    VENV="$WORK/venv-asan"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/requirements.txt
    # A build directory of its own, and force: setuptools decides what to
    # recompile by timestamps, not flags, so a build/ made by an ordinary
    # build would be reused uninstrumented.
    cat >"$WORK/asan-build.cfg" <<CFG
[build]
build_base = $WORK/asan-build
[build_ext]
force = 1
CFG
    SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
    DIST_EXTRA_CONFIG="$WORK/asan-build.cfg" CFLAGS="$SAN_FLAGS" LDFLAGS="-fsanitize=address,undefined" \
        "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --no-deps .
    SO=$(cd "$WORK" && "$VENV/bin/python" -P -c \
        'import glob, importlib.util as u; print(*glob.glob(u.find_spec("cb3").submodule_search_locations[0] + "/_cb3*.so"))')
    symbols=$(nm -D --undefined-only "$SO")
    for symbol in __asan_report_ __ubsan_handle_; do
        [[ $symbols == *"$symbol"* ]] || {
            echo "$SO is not instrumented (no $symbol* symbols): CFLAGS did not reach the compiler" >&2
            exit 1
        }
    done
    echo "instrumented: $SO ($(grep -c '__asan_\|__ubsan_' <<<"$symbols") sanitizer symbols)"

    step "ASan + UBSan: pytest (LD_PRELOAD=$LIBASAN, PYTHONMALLOC=malloc)"
    loaded=$(cd "$WORK" && LD_PRELOAD="$LIBASAN" ASAN_OPTIONS=detect_leaks=0 "$VENV/bin/python" -P -c 'import cb3; print(cb3._cb3.__file__)')
    [[ $loaded == "$SO" ]] || { echo "the tests would import $loaded, not $SO" >&2; exit 1; }
    LOG="$WORK/asan-pytest.log"
    status=0
    # PYCRYPTODOME_DISABLE_DEEPBIND: pycryptodome dlopens its C parts with
    # RTLD_DEEPBIND, which the ASan runtime refuses (it aborts the process).
    # tests/test_shared_memory.py races a second writer against each call and
    # asserts that the race landed; ASan's slowdown makes that timing-dependent,
    # so it runs in the plain, PyPy and wheel runs, not here. The file
    # helpers' memory scan (test_secrets.py) needs glibc's malloc to keep
    # freed blocks mapped (mallopt); ASan's allocator replaces glibc's and
    # refuses mallopt, so that scan runs in the plain run only.
    (cd "$WORK" && LD_PRELOAD="$LIBASAN" PYTHONMALLOC=malloc \
        PYCRYPTODOME_DISABLE_DEEPBIND=1 \
        ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=0" \
        UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1" \
        "$VENV/bin/python" -P -m pytest "$ROOT/tests" -q -p no:cacheprovider -m "not slow" \
        --ignore="$ROOT/tests/test_c_api.py" --ignore="$ROOT/tests/test_downstream.py" \
        --ignore="$ROOT/tests/test_shared_memory.py" \
        -k "not test_rss_stable_over_200k_calls and not test_objects_freed and not test_no_plaintext_survives_the_file_helpers") >"$LOG" 2>&1 || status=$?
    tail -4 "$LOG"
    reports=$(sanitizer_reports "$LOG")
    if ((status != 0)) || [[ -n $reports ]]; then
        grep -B5 -A40 -E "ERROR: AddressSanitizer|runtime error:" "$LOG" | head -80 || tail -60 "$LOG"
        echo "ASan/UBSan run failed (exit $status); log: $LOG" >&2
        exit 1
    fi
    echo "ASan + UBSan: 0 reports"
fi

if wants valgrind; then
    command -v valgrind >/dev/null || { step "installing valgrind"; apt_install valgrind; }
    "$PY" -P -c 'import cb3' || { echo "$PY cannot import cb3: run scripts/test.sh first or set CB3_PYTHON" >&2; exit 1; }
    step "valgrind memcheck: vectors, Stream, bad-input matrix (PYTHONMALLOC=malloc)"
    LOG="$WORK/valgrind.log"
    status=0
    (cd "$WORK" && PYTHONMALLOC=malloc valgrind --tool=memcheck --error-exitcode=1 --errors-for-leak-kinds=definite \
        --leak-check=full --show-leak-kinds=definite --undef-value-errors=no --num-callers=40 \
        --suppressions="$ROOT/scripts/valgrind-python.supp" --log-file="$LOG" \
        "$PY" -P -m pytest "$ROOT/tests/test_vectors.py" "$ROOT/tests/test_stream.py" "$ROOT/tests/test_bad_inputs.py" \
        -q -p no:cacheprovider -m "not slow and not threads") >"$WORK/valgrind-pytest.log" 2>&1 || status=$?
    tail -3 "$WORK/valgrind-pytest.log"
    grep -E "ERROR SUMMARY|definitely lost:" "$LOG" | sed 's/^==[0-9]*== //'
    if ((status != 0)) || ! grep -q "ERROR SUMMARY: 0 errors" "$LOG"; then
        grep -A30 -E "^==[0-9]+== (Invalid|Mismatched|Source and destination|Syscall param|.*definitely lost in)" "$LOG" | head -80
        echo "valgrind found errors (exit $status); log: $LOG" >&2
        exit 1
    fi
    echo "valgrind: 0 errors"
fi
echo "sanitize: all clean"
