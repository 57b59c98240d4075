"""`measure.py per-call`: per-call timings of a few cb3 calls, each timed
alone (docs/pypy.md, "Buffer routes"). Runs on CPython and PyPy.

    python asv_benchmarks/measure.py per-call [--repeat 7] [--json]

For each case: a warm-up (PyPy's JIT), a call count whose batch takes about
0.2 s (timing.calibrate), then `repeat` batches; per call, the best and the
median batch.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from typing import Callable, Iterator

import cb3

from .timing import calibrate, loop, warm_up

KEY = bytes(range(32))
NONCE = bytes(range(24))
BUDGET = 0.2


def cases() -> Iterator[tuple[str, Callable[[], object]]]:
    cipher = cb3.ChaCha20Blake3(KEY)
    for label, size in (("64 B", 64), ("1 MiB", 1 << 20)):
        data = bytes(size)
        data_ba = bytearray(size)
        out = bytearray(size + cb3.TAG_SIZE)
        yield f"encrypt({label} bytes) -> bytes", lambda c=cipher, d=data: c.encrypt(NONCE, d)
        yield f"encrypt({label} bytearray) -> bytes", lambda c=cipher, d=data_ba: c.encrypt(NONCE, d)
        yield f"encrypt_into({label} bytes, bytearray)", lambda c=cipher, d=data, o=out: c.encrypt_into(NONCE, d, None, o)


def measure(call: Callable[[], object], repeat: int) -> tuple[float, float, int]:
    """(best, median) seconds per call over `repeat` batches, and the calls per batch."""
    timer = loop(call)
    warm_up(timer, BUDGET)
    number = calibrate(timer, BUDGET)
    runs = [timer(number) / number for _ in range(repeat)]
    return min(runs), statistics.median(runs), number


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="measure.py per-call", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    impl = f"{platform.python_implementation()} {platform.python_version()}"
    if hasattr(sys, "pypy_version_info"):
        impl += " (PyPy %d.%d.%d)" % sys.pypy_version_info[:3]
    impl += f", cb3 {cb3.HPY_ABI} ABI"
    for name, fn in cases():
        best, median, number = measure(fn, args.repeat)
        if args.json:
            print(json.dumps({"impl": impl, "case": name, "best_s": best, "median_s": median, "number": number}))
        else:
            unit, scale = ("µs", 1e6) if best >= 1e-5 else ("ns", 1e9)
            print(f"{impl:45} {name:42} best {best * scale:9.1f} {unit}  median {median * scale:9.1f} {unit}")
        sys.stdout.flush()
    return 0
