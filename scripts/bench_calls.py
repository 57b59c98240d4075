"""Per-call timings of cb3 calls, for docs/pypy.md. Runs on CPython and PyPy.

    python scripts/bench_calls.py [--repeat 7] [--json]

For each case: timeit with `number` chosen so one repeat takes >= 0.2 s,
`repeat` repeats after a warm-up (the PyPy JIT), per-call best and median.
Run it from outside the source tree so that the installed cb3 is imported.
"""

import argparse
import json
import platform
import statistics
import sys
import timeit

import cb3

KEY = bytes(range(32))
NONCE = bytes(range(24))


def cases():
    cipher = cb3.ChaCha20Blake3(KEY)
    for label, size in (("64 B", 64), ("1 MiB", 1 << 20)):
        data = bytes(size)
        data_ba = bytearray(size)
        out = bytearray(size + cb3.TAG_SIZE)
        yield f"encrypt({label} bytes) -> bytes", lambda c=cipher, d=data: c.encrypt(NONCE, d)
        yield f"encrypt({label} bytearray) -> bytes", lambda c=cipher, d=data_ba: c.encrypt(NONCE, d)
        yield f"encrypt_into({label} bytes, bytearray)", lambda c=cipher, d=data, o=out: c.encrypt_into(NONCE, d, None, o)


def measure(fn, repeat):
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()  # also a warm-up
    number = max(1, number)
    for _ in range(3):  # JIT warm-up
        timer.timeit(number)
    while timer.timeit(number) < 0.2:
        number *= 2
    runs = [t / number for t in timer.repeat(repeat=repeat, number=number)]
    return min(runs), statistics.median(runs), number


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
