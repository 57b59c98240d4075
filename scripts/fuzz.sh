#!/usr/bin/env bash
# Bounded fuzzing of cb3 (docs/security-testing.md):
#   - atheris harnesses (fuzz/atheris/fuzz_cb3.py) for decrypt, decrypt_into,
#     decrypt_detached, decrypt_in_place and Stream.decrypt: arbitrary bytes
#     and argument objects, checked against the documented contract and an
#     independent implementation (tests/reference.py); and the chunked stream
#     reader (fuzz/atheris/fuzz_chunked.py, target `chunked`): fuzzed headers,
#     chunk sizes and chunk-level tampering against the reference;
#   - cargo-fuzz targets (rustlib/fuzz) for the C ABI under AddressSanitizer:
#     the contract of every cb3_aead_* and cb3_stream_* function with
#     fuzzer-placed (overlapping, NULL, short, huge) buffers, the remaining
#     functions, and a differential target against the chacha20-blake3 crate,
#     seeded with the three test vectors (cb3/selftest.py).
# Each target runs DURATION seconds (default 20); the Python and the Rust
# targets run side by side (one core each). Any crash, sanitizer report,
# undocumented exception or contract violation fails the script and leaves
# the input that caused it in $CB3_FUZZ_DIR/artifacts.
#
# Usage: bash scripts/fuzz.sh                 (after scripts/test.sh built .test/venv)
#        DURATION=600 bash scripts/fuzz.sh    (longer; see docs/security-testing.md)
#        CB3_FUZZ_TARGETS="decrypt differential" bash scripts/fuzz.sh
# Environment: CB3_PYTHON (a Python with cb3 installed; default
# .test/venv/bin/python), CB3_FUZZ_DIR (work dir: corpora, logs,
# artifacts; default .test/fuzz), CB3_TOOLS_DIR (cargo-fuzz and its build
# cache; default ~/.cache/cb3-tools).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
DURATION="${DURATION:-20}"
WORK="${CB3_FUZZ_DIR:-$ROOT/.test/fuzz}"
TOOLS="${CB3_TOOLS_DIR:-$HOME/.cache/cb3-tools}"
PY="${CB3_PYTHON:-$ROOT/.test/venv/bin/python}"
CARGO_FUZZ_VERSION=0.13.2
TARGET_DIR="${CB3_FUZZ_TARGET_DIR:-$TOOLS/fuzz-target}"
PY_TARGETS=(decrypt decrypt_into decrypt_detached decrypt_in_place stream_decrypt blake3 chacha20 chunked)
RUST_TARGETS=(aead_contract stream_contract differential misc)
if [[ -n "${CB3_FUZZ_TARGETS:-}" ]]; then
    read -r -a wanted <<<"$CB3_FUZZ_TARGETS"
    keep() { local t; for t in "${wanted[@]}"; do [[ $t == "$1" ]] && return 0; done; return 1; }
    py=() rust=()
    for t in "${PY_TARGETS[@]}"; do keep "$t" && py+=("$t"); done
    for t in "${RUST_TARGETS[@]}"; do keep "$t" && rust+=("$t"); done
    PY_TARGETS=(${py[@]+"${py[@]}"}) RUST_TARGETS=(${rust[@]+"${rust[@]}"})
fi
mkdir -p "$WORK/logs" "$WORK/artifacts"

step() { printf '\n--> %s\n' "$*"; }

step "tools: atheris (fuzz/requirements.txt), cargo-fuzz $CARGO_FUZZ_VERSION"
if [[ "$("$TOOLS/bin/cargo-fuzz" --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$TOOLS"
fi
# CB3_FUZZ_TOOLS_ONLY=1: only install cargo-fuzz (scripts/test.sh does it early, in the background).
[[ -z "${CB3_FUZZ_TOOLS_ONLY:-}" ]] || exit 0
"$PY" -P -c 'import cb3' || { echo "$PY cannot import cb3: run scripts/test.sh first or set CB3_PYTHON" >&2; exit 1; }
"$PY" -m pip install --quiet --disable-pip-version-check -r fuzz/requirements.txt
export PATH="$TOOLS/bin:$PATH"
# cargo-fuzz needs nightly-only flags (-Zsanitizer); this stable toolchain
# accepts them with RUSTC_BOOTSTRAP=1. cargo-fuzz adds its flags to RUSTFLAGS,
# which replaces rustlib/.cargo/config.toml's rustflags, so those go there.
CONFIG_RUSTFLAGS=$(sed -n 's/^rustflags = \[\(.*\)\]$/\1/p' rustlib/.cargo/config.toml | tr -d '",')
[[ -n $CONFIG_RUSTFLAGS ]] || { echo "no rustflags line in rustlib/.cargo/config.toml" >&2; exit 1; }
export RUSTC_BOOTSTRAP=1 RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }$CONFIG_RUSTFLAGS"
FUZZ=(cargo fuzz)

if ((${#RUST_TARGETS[@]})); then
    # cargo-fuzz has no --locked: check the committed rustlib/fuzz/Cargo.lock
    # first, so that the build below has nothing to rewrite.
    (cd rustlib/fuzz && cargo fetch --locked --quiet) || {
        echo "rustlib/fuzz/Cargo.lock is out of date: run 'cargo update --workspace' in rustlib/fuzz and commit it" >&2
        exit 1
    }
    step "cargo fuzz build (AddressSanitizer, debug assertions; target dir $TARGET_DIR)"
    if ! (cd rustlib && "${FUZZ[@]}" build --target-dir "$TARGET_DIR") >"$WORK/logs/build.log" 2>&1; then
        cat "$WORK/logs/build.log"
        echo "cargo fuzz build failed" >&2
        exit 1
    fi
    tail -1 "$WORK/logs/build.log"
    SEEDS="$WORK/seeds"
    rm -rf "$SEEDS"
    "$PY" -P rustlib/fuzz/make_seeds.py "$SEEDS"
fi

# run_one KIND TARGET: one fuzzing session; its log in $WORK/logs.
run_one() {
    local kind=$1 target=$2 log="$WORK/logs/$1-$2.log" corpus="$WORK/corpus/$1-$2"
    local options=(-max_total_time="$DURATION" -timeout=60 -print_final_stats=1
        -artifact_prefix="$WORK/artifacts/$kind-$target-")
    mkdir -p "$corpus"
    local status=0
    if [[ $kind == py ]]; then
        local script=fuzz/atheris/fuzz_cb3.py
        [[ $target == chunked ]] && script=fuzz/atheris/fuzz_chunked.py
        "$PY" "$script" "$target" "${options[@]}" "$corpus" >"$log" 2>&1 || status=$?
    else
        (cd rustlib && "${FUZZ[@]}" run --target-dir "$TARGET_DIR" "$target" "$corpus" "$SEEDS/$target" -- \
            "${options[@]}" -rss_limit_mb=4096) >"$log" 2>&1 || status=$?
    fi
    local execs
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    echo "$status ${execs:-0}" >"$WORK/logs/$kind-$target.result"
}

lane() {  # lane KIND TARGET...: the targets one after another
    local kind=$1
    shift
    local target
    for target in "$@"; do run_one "$kind" "$target"; done
}

step "fuzzing: ${#PY_TARGETS[@]} atheris + ${#RUST_TARGETS[@]} cargo-fuzz targets, ${DURATION} s each, two at a time"
rm -f "$WORK"/logs/*.result
started=$SECONDS
lane py ${PY_TARGETS[@]+"${PY_TARGETS[@]}"} &
py_lane=$!
lane rust ${RUST_TARGETS[@]+"${RUST_TARGETS[@]}"} &
rust_lane=$!
wait "$py_lane" "$rust_lane"

failed=0
printf '\n%-8s %-20s %14s  %s\n' kind target executions result
for kind_targets in "py:${PY_TARGETS[*]-}" "rust:${RUST_TARGETS[*]-}"; do
    kind=${kind_targets%%:*}
    for target in ${kind_targets#*:}; do
        read -r status execs <"$WORK/logs/$kind-$target.result"
        result=ok
        if ((status != 0)); then
            result="FAILED (exit $status): see $WORK/logs/$kind-$target.log"
            failed=$((failed + 1))
        elif ((execs == 0)); then
            result="FAILED: no executions"
            failed=$((failed + 1))
        fi
        printf '%-8s %-20s %14s  %s\n' "$kind" "$target" "$execs" "$result"
    done
done
echo "fuzzing took $((SECONDS - started)) s"
if ((failed)); then
    for log in "$WORK"/logs/*.log; do
        kind_target=$(basename "$log" .log)
        [[ -f "$WORK/logs/$kind_target.result" ]] || continue
        read -r status _ <"$WORK/logs/$kind_target.result"
        if ((status != 0)); then
            echo "==== $kind_target (last 40 lines)"
            tail -40 "$log"
        fi
    done
    ls -l "$WORK/artifacts" >&2
    echo "fuzz: $failed target(s) failed" >&2
    exit 1
fi
echo "fuzz: all targets passed"
