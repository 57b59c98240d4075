"""`python -m cb3`: what is installed, a known-answer self-test, and one
throughput line per message size.

Subcommands: `python -m cb3 bench` (side-by-side comparison with peers);
`python -m cb3 b3sum ...` (a b3sum-compatible command, cb3/b3sum.py);
`python -m cb3 encrypt|decrypt ...` (files of any size, cb3/cli_files.py);
`--cflags`, `--libs`, `--includedir`, `--libdir`, `--pkgconfigdir` print what
a C build needs to use cb3's header and static library (cb3/capi.py).
"""

import os
import platform
import statistics
import sys
import time
from typing import Callable

import cb3
from cb3 import _cb3, selftest
from cb3.bench import cpu_name, human_size

SIZES = [64, 1024, 64 * 1024, 1024 * 1024, 16 * 1024 * 1024]


def _median_seconds(call: Callable[[], object], budget: float = 0.05, rounds: int = 5) -> float:
    """Median time of one call over `rounds` timed loops of ~`budget` s."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        elapsed = time.perf_counter() - start
        if elapsed >= budget / 4 or number >= 1 << 20:
            break
        number *= 4
    number = max(1, int(number * (budget / max(elapsed, 1e-9))))
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            call()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def info() -> int:
    print(f"cb3 {cb3.__version__} (rustlib {_cb3.version()})")
    print(f"interpreter: {platform.python_implementation()} {platform.python_version()} on {platform.machine()}")
    print(f"HPy ABI: {cb3.HPY_ABI}")
    print(f"SIMD: {cb3.simd_backend()} ({cpu_name()})")
    print(f"known-answer tests: {selftest.run()} passed")
    key, nonce = cb3.generate_key(), cb3.generate_nonce()
    cipher = cb3.ChaCha20Blake3(key)
    print("encrypt throughput (median of 5, one thread):")
    for size in SIZES:
        data = os.urandom(size)
        seconds = _median_seconds(lambda: cipher.encrypt(nonce, data))
        print(f"  {human_size(size):>8}: {seconds * 1e9:12.0f} ns/call {size / seconds / 1e6:9.0f} MB/s")
    return 0


def main(argv: list[str]) -> int:
    if not argv:
        return info()
    from cb3.capi import main_flags

    status = main_flags(argv)
    if status is not None:
        return status
    command, rest = argv[0], argv[1:]
    if command == "bench":
        from cb3 import bench

        return bench.main(rest)
    if command == "b3sum":
        from cb3 import b3sum

        return b3sum.main(rest)
    if command in ("encrypt", "decrypt"):
        from cb3 import cli_files

        return cli_files.main(argv)
    print(f"usage: python -m cb3 [bench ... | b3sum ... | encrypt ... | decrypt ... | --cflags | --libs]\nunknown command: {command}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
