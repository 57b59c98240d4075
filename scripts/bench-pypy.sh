#!/usr/bin/env bash
# PyPy vs CPython per-call table (issue 15, "PyPy at CPython's speed"):
# builds cb3 for CPython 3.11 (host venv, cpython ABI) and for PyPy 3.11 (the
# scripts/pypy.sh chroot, hybrid ABI), runs `python -m cb3 bench` on both in
# interleaved rounds and writes docs/pypy-speed.md (scripts/pypy_speed.py).
#
#   sudo scripts/bench-pypy.sh          (needs the chroot: run scripts/pypy.sh once)
#
# Environment: CB3_BENCH_ROUNDS (default 3), CB3_BENCH_WARMUP (seconds each
# case runs before it is timed, default 1: PyPy's JIT, and its GC heap past
# the first major collection, docs/pypy.md; 0 times a fresh process),
# CB3_BENCH_CLOCK (process: CPU time, the default, steadier on a shared
# machine; wall), CB3_PYPY_CACHE (default /var/cache/cb3-pypy), CB3_BENCH_OUT
# (default docs/pypy-speed.md), CB3_BENCH_PYPY8=1 (adds a PyPy 8.0 column: the
# Debian sid chroot of scripts/chroot-test.sh pypy8.0, cpython HPy ABI through
# cpyext, since 8.0 has no HPy runtime; CB3_SID_CACHE, default /var/cache/cb3-sid).
# About 4 minutes on the 2-core reference VM (builds 40 s, 3 rounds 3 min);
# scripts/test.sh runs it last, with CB3_BENCH_OUT=.test/pypy-speed.md.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CB3_PYPY_CACHE:-/var/cache/cb3-pypy}
ROOT=$CACHE/chroot
ROUNDS=${CB3_BENCH_ROUNDS:-3}
WARMUP=${CB3_BENCH_WARMUP:-1}
CLOCK=${CB3_BENCH_CLOCK:-process}
OUT=${CB3_BENCH_OUT:-$REPO/docs/pypy-speed.md}
WORK=$REPO/.test/bench-pypy
PYTHON=${PYTHON:-python3.11}
BENCH_ARGS=(-P -m cb3 bench --only "cb3 encrypt,cb3 decrypt,cb3 keyed_hash" --sizes 64,1048576 --rounds 3
    --clock "$CLOCK" --warmup "$WARMUP")
START=$SECONDS
log() { printf '[bench-pypy.sh %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root (chroot)"; exit 1; }
[ -f "$ROOT/.cb3-chroot-complete" ] || { log "no PyPy chroot in $ROOT: run scripts/pypy.sh first"; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK"

log "CPython: venv and build"
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check \
    $(grep -E '^(hpy|setuptools|wheel)==' "$REPO/tests/requirements.txt")
"$WORK/venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation "$REPO"

# The PyPy side has its own directories in the chroot (/bench, /opt/cb3-bench-venv),
# so test runs of pypy.sh (/build, /opt/cb3-venv) are not disturbed; the
# chroot's lock is held for the whole run so that it is not rebuilt meanwhile.
exec 9>"$CACHE/.lock"
flock 9
SID_ROOT=${CB3_SID_CACHE:-/var/cache/cb3-sid}/chroot
if [ -n "${CB3_BENCH_PYPY8:-}" ]; then
    [ -f "$SID_ROOT/.cb3-chroot-complete" ] || { log "no sid chroot in $SID_ROOT: run scripts/chroot-test.sh pypy8.0 first"; exit 1; }
    exec 8>"${CB3_SID_CACHE:-/var/cache/cb3-sid}/.lock"
    flock 8
fi
in_chroot() {  # in_chroot [--root DIR] COMMAND...: in the PyPy 7.3 chroot, or DIR
    local root=$ROOT
    [ "$1" != --root ] || { root=$2; shift 2; }
    # shellcheck disable=SC2016
    unshare -m -- sh -c 'mount -t proc proc "$1/proc" && shift && exec chroot "$@"' sh "$root" "$root" \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        PYTHONDONTWRITEBYTECODE=1 "$@"
}
log "PyPy: rustlib (host cargo), venv and build"
(cd "$REPO/rustlib" && cargo build --quiet --release --locked --lib --target-dir "$CACHE/cargo-target-bench")
pypy_setup() {  # pypy_setup CHROOT: cb3 built by that chroot's PyPy into /opt/cb3-bench-venv
    rm -rf "$1/bench" && mkdir -p "$1/bench/src"
    cp "$CACHE/cargo-target-bench/release/libcb3.a" "$1/bench/libcb3.a"
    (cd "$REPO" && git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
        [ -e "$f" ] && printf '%s\0' "$f"
    done | tar --null -T - -cf -) | tar -C "$1/bench/src" -xf -
    [ -x "$1/opt/cb3-bench-venv/bin/python" ] || in_chroot --root "$1" pypy3 -m venv /opt/cb3-bench-venv
    in_chroot --root "$1" env CB3_STATICLIB=/bench/libcb3.a /opt/cb3-bench-venv/bin/python -m pip install -q \
        --no-deps --no-build-isolation --force-reinstall --disable-pip-version-check /bench/src
}
pypy_setup "$ROOT"
[ -z "${CB3_BENCH_PYPY8:-}" ] || pypy_setup "$SID_ROOT"

label() {  # label FILE LABEL: adds "label" to a bench JSON file
    "$WORK/venv/bin/python" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["label"] = sys.argv[2]
json.dump(d, open(sys.argv[1], "w"))' "$1" "$2"
}
for round in $(seq 1 "$ROUNDS"); do
    log "round $round/$ROUNDS"
    (cd "$WORK" && "$WORK/venv/bin/python" "${BENCH_ARGS[@]}" --json "$WORK/cpython-$round.json" >/dev/null)
    label "$WORK/cpython-$round.json" "CPython 3.11"
    in_chroot sh -c 'cd /bench && exec "$@"' sh /opt/cb3-bench-venv/bin/python "${BENCH_ARGS[@]}" \
        --json /bench/pypy.json >/dev/null
    cp "$ROOT/bench/pypy.json" "$WORK/pypy-$round.json" && label "$WORK/pypy-$round.json" "PyPy 3.11"
    # The same with a 4 MB nursery (PyPy's default is half the L3 cache: see docs/pypy.md)
    in_chroot sh -c 'cd /bench && exec env PYPY_GC_NURSERY=4M "$@"' sh /opt/cb3-bench-venv/bin/python \
        "${BENCH_ARGS[@]}" --json /bench/pypy.json >/dev/null
    cp "$ROOT/bench/pypy.json" "$WORK/pypy4m-$round.json" && label "$WORK/pypy4m-$round.json" "PyPy, PYPY_GC_NURSERY=4M"
    if [ -n "${CB3_BENCH_PYPY8:-}" ]; then
        in_chroot --root "$SID_ROOT" sh -c 'cd /bench && exec "$@"' sh /opt/cb3-bench-venv/bin/python "${BENCH_ARGS[@]}" \
            --json /bench/pypy.json >/dev/null
        cp "$SID_ROOT/bench/pypy.json" "$WORK/pypy8-$round.json" && label "$WORK/pypy8-$round.json" "PyPy 8.0"
    fi
done
{
    echo "- Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "  at the end; L3 cache $(lscpu | sed -n 's/^L3 cache: *//p')."
} >"$WORK/note.txt"
"$WORK/venv/bin/python" "$REPO/scripts/pypy_speed.py" "$OUT" "$WORK/note.txt" \
    "$WORK"/cpython-*.json "$WORK"/pypy-*.json "$WORK"/pypy4m-*.json $(ls "$WORK"/pypy8-*.json 2>/dev/null)
log "wrote $OUT"
