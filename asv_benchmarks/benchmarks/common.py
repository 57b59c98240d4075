"""Inputs shared by the benchmarks, built lazily: one size at a time, on first use.

asv runs every parameter combination in its own process (forked after the
suite is imported), so only the sizes a process benchmarks are ever built:
importing the suite allocates nothing large (it used to build ~0.5 GB).

No benchmark has a `setup()`: asv_runner >= 0.3 forces number = 1 when a
benchmark has one, which inflates sub-microsecond timings by about 50 %
(one sample per call plus the timer's own cost). Inputs come instead from
the `Lazy` tables below; the first lookup of a size (asv's warm-up call)
builds it, every later lookup is a plain dict hit (~10 ns, in every timing
alike, like the method call asv itself adds: see bench_overhead).

Benchmark files run against historical commits too (asv benchmarks each
commit with the working tree's benchmark files): use only API that the
baseline commits in asv_benchmarks/results/ have.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Callable

import cb3

KiB = 1024
MiB = 1024 * KiB

#: The AEAD's sizes: the fixed-cost region, the 1-16 KiB gap, cache-sized and
#: DRAM-sized messages (64 MiB allocating calls are allocator-bound: see README).
SIZES = [64, 256, 1 * KiB, 4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB]
#: Fewer sizes for the secondary operations (hash, raw ChaCha, Stream, ...).
SOME_SIZES = [64, 1 * KiB, 64 * KiB, 1 * MiB, 16 * MiB]
#: Sizes where more than one thread is used (max_threads).
LARGE = [1 * MiB, 16 * MiB, 64 * MiB]

KEY = bytes(range(32))
NONCE = bytes(range(100, 124))
NONCE12 = NONCE[:12]
CONTEXT = "cb3 asv 2026-11-30 benchmark context"


class Lazy(dict):  # type: ignore[type-arg]
    """A dict that builds a missing entry with `build(key)` on first lookup."""

    def __init__(self, build: Callable[[Any], Any]) -> None:
        super().__init__()
        self.build = build

    def __missing__(self, key: Any) -> Any:
        value = self[key] = self.build(key)
        return value


def _random(size: int) -> bytes:
    # Random-looking bytes whose pages are all written (not calloc's shared
    # zero page, which would make large inputs unrealistically cache-hot);
    # far cheaper than os.urandom(size) for 64 MiB.
    block = os.urandom(min(size, 64 * KiB))
    count, rest = divmod(size, len(block))
    return block * count + block[:rest] if rest else block * count


#: MESSAGES[size]: `size` random bytes.
MESSAGES = Lazy(_random)

#: The AEAD under KEY, and SEALED[size]: MESSAGES[size] sealed by it under NONCE.
CIPHER = cb3.ChaCha20Blake3(KEY)
SEALED = Lazy(lambda size: CIPHER.encrypt(NONCE, MESSAGES[size]))

_TMP: list[str] = []


def _file(size: int) -> str:
    """A file of `size` random bytes (left in the page cache: hashing, not disk)."""
    if not _TMP:
        _TMP.append(tempfile.mkdtemp(prefix="cb3-asv-"))
    path = os.path.join(_TMP[0], f"{size}.bin")
    with open(path, "wb") as f:
        f.write(_random(size))
    return path


#: FILES[size]: the path of a temporary file of `size` random bytes.
FILES = Lazy(_file)


def remove_files() -> None:
    """Removes what FILES made. A `teardown` (asv runs it in the benchmark's
    process, which ends with os._exit: atexit would not run); unlike `setup`
    it leaves asv's calibration of `number` alone."""
    FILES.clear()
    while _TMP:
        shutil.rmtree(_TMP.pop(), ignore_errors=True)
