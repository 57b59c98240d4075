"""`measure.py instructions`: where a 64-byte call's instructions go, per
interpreter: the evidence table of docs/results/pypy-speed.md (the
pypy-speed step runs it). Imports nothing of the tools, so that it also
runs as a script of its own where only cb3 is installed (a PyPy chroot).

Instruction counts, not times: callgrind's counts repeat exactly on a
machine whose timings drift by a third from one minute to the next. Each
case runs twice under callgrind, with `SHORT` and `LONG` calls after the
same warm-up (PyPy's JIT included); the difference over `LONG - SHORT` calls
is what one call costs once start-up, import and JIT compilation cancel.

    python instructions.py workload CASE CALLS     (under valgrind)
    python instructions.py split CASE SHORT.out LONG.out   -> JSON
    (or python asv_benchmarks/measure.py instructions ...)

The split, from callgrind_annotate's inclusive counts:
- rust: the rustlib entry point of the call (cb3_aead_encrypt,
  cb3_blake3_keyed_hash), the same code on every interpreter;
- buffers: `cb3_buffer_get`, the one place cext turns arguments into
  pointers (on PyPy, HPy's context calls for bytes, cpyext for bytearrays);
- rest: the interpreter's call into the extension, argument parsing, the
  result object and the releases.
Callgrind's CPU has no AVX-512 and counts a `rep stosb` once per byte, so
the Rust column is not the Rust time; it is the same on every interpreter,
which is what the table shows.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

SHORT, LONG, WARMUP = 10_000, 30_000, 20_000

#: case -> (the call, its rustlib entry point)
CASES = {
    "encrypt": ("cipher.encrypt(nonce, data)", "cb3_aead_encrypt"),
    "encrypt_into": ("cipher.encrypt_into(nonce, data, None, out)", "cb3_aead_encrypt"),
    "keyed_hash": ("cb3.keyed_hash(key, data)", "cb3_blake3_keyed_hash"),
}


def workload(case: str, calls: int) -> None:
    import cb3

    key, nonce, data = bytes(range(32)), bytes(24), bytes(64)
    namespace = {"cb3": cb3, "cipher": cb3.ChaCha20Blake3(key), "key": key, "nonce": nonce, "data": data,
                 "out": bytearray(96)}
    # A loop of its own per case, as a program's call site is (timeit's way).
    exec(f"def run(n):\n    for _ in range(n):\n        {CASES[case][0]}\n", namespace)
    namespace["run"](WARMUP)
    namespace["run"](calls)


def inclusive(path: str) -> tuple[int, dict[str, int]]:
    """Total instructions and each function's inclusive count."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    total, functions = 0, {}
    for count, name in re.findall(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", text, re.M):
        value = int(count.replace(",", ""))
        if "PROGRAM TOTALS" in name:
            total = value
            continue
        symbol = re.sub(r"\s*\[.*\]$", "", name).split(":")[-1]
        functions[symbol] = max(functions.get(symbol, 0), value)
    return total, functions


def split(case: str, short: str, long: str) -> dict[str, float]:
    (t0, f0), (t1, f1) = inclusive(short), inclusive(long)
    calls = LONG - SHORT

    def per_call(symbol: str) -> float:
        return (f1.get(symbol, 0) - f0.get(symbol, 0)) / calls

    total = (t1 - t0) / calls
    rust, buffers = per_call(CASES[case][1]), per_call("cb3_buffer_get")
    return {"total": total, "rust": rust, "buffers": buffers, "rest": total - rust - buffers}


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "workload" and argv[1] in CASES:
        workload(argv[1], int(argv[2]))
    elif len(argv) == 4 and argv[0] == "split" and argv[1] in CASES:
        print(json.dumps(split(argv[1], argv[2], argv[3])))
    else:
        print(f"usage: instructions.py workload CASE CALLS | split CASE SHORT.out LONG.out (CASE: {', '.join(CASES)})",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
