"""Inputs shared by the benchmarks, built once at import.

No per-benchmark `setup()`: asv_runner >= 0.3 forces number = 1 when a
benchmark has one, which inflates sub-microsecond timings by about 50 %.
"""

import os

SIZES = [64, 256, 1024, 4096, 64 * 1024, 1 << 20, 16 << 20, 64 << 20]
SIZE_NAMES = ["64B", "256B", "1KiB", "4KiB", "64KiB", "1MiB", "16MiB", "64MiB"]

KEY = os.urandom(32)
NONCE = os.urandom(24)
NONCE12 = NONCE[:12]
MESSAGES = {size: os.urandom(size) for size in SIZES}


def named(size: int) -> str:
    return SIZE_NAMES[SIZES.index(size)]
