"""Helpers shared by the test modules (buffer kinds, sentinels, seeded data)."""

from __future__ import annotations

import array
import collections
import mmap
import os
import random
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable

import numpy as np
import pytest

KEY_SIZE = 32
NONCE_SIZE = 24
TAG_SIZE = 32

#: Cases tried by table-driven tests (test_bad_inputs.py), by label; conftest's
#: pytest_terminal_summary prints them at the end of the run.
CASE_COUNTS: collections.Counter[str] = collections.Counter()
#: Figures measured by tests (test_leaks.py), printed the same way.
MEASUREMENTS: dict[str, str] = {}


def signals_at_default() -> None:
    """preexec_fn for a child that a test signals: a test run started from a
    script (`nohup ... &`) inherits SIGINT and SIGHUP ignored, and its
    children would too."""
    for number in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)


def seeded(seed: int) -> random.Random:
    return random.Random(seed)


def run_threads(workers: list[Callable[[], Any]]) -> None:
    """Starts one thread per worker, all at once, and waits for them (two
    minutes at most: a thread still running then has hung)."""
    threads = [threading.Thread(target=worker) for worker in workers]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "a thread hung"


_PATTERN = bytes((i * 151 + 89) & 0xFF for i in range(256))


def sentinel(n: int) -> bytes:
    """A recognisable, non-constant pattern to pre-fill output buffers with
    (period 256: every byte value, none of them in order)."""
    return (_PATTERN * (n // 256 + 1))[:n]


def sentinel_buf(n: int) -> bytearray:
    return bytearray(sentinel(n))


# ---- buffer kinds -------------------------------------------------------

def _mmap_of(data: bytes) -> Any:
    m = mmap.mmap(-1, max(len(data), 1))
    m[: len(data)] = data
    if len(data) == 0:
        # mmap cannot be empty; an empty memoryview slice of one still
        # exercises an mmap-backed export.
        return memoryview(m)[:0]
    return m


def _padded_view(data: bytes) -> memoryview:
    return memoryview(b"\xaa\xbb\xcc" + data + b"\xdd\xee")[3 : 3 + len(data)]


def _numpy_2d(data: bytes) -> np.ndarray[Any, Any]:
    arr = np.frombuffer(data, dtype=np.uint8).copy()
    if len(data) % 4 == 0 and len(data) > 0:
        return arr.reshape(4, len(data) // 4)
    return arr.reshape(1, len(data))


#: Every kind of object cb3 must accept as an input byte buffer.
READ_KINDS: dict[str, Callable[[bytes], Any]] = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview-bytes": lambda d: memoryview(d),
    "memoryview-bytearray": lambda d: memoryview(bytearray(d)),
    "memoryview-slice": _padded_view,
    "memoryview-cast-c": lambda d: memoryview(bytearray(d)).cast("c"),
    "mmap": _mmap_of,
    "array-B": lambda d: array.array("B", d),
    "array-b": lambda d: array.array("b", d),
    "numpy-uint8": lambda d: np.frombuffer(d, dtype=np.uint8).copy(),
    "numpy-int8": lambda d: np.frombuffer(d, dtype=np.int8).copy(),
    "numpy-readonly": lambda d: np.frombuffer(d, dtype=np.uint8),
    "numpy-2d": _numpy_2d,
}


def _writable_mmap(data: bytes) -> Any:
    m = mmap.mmap(-1, max(len(data), 1))
    m[: len(data)] = data
    return m if data else memoryview(m)[:0]


def _writable_padded_view(data: bytes) -> memoryview:
    backing = bytearray(b"\x01\x02\x03" + data + b"\x04\x05")
    return memoryview(backing)[3 : 3 + len(data)]


#: Every kind of writable object cb3 must accept as `buf`. Each returns the
#: object; read it back with `as_bytes`.
WRITE_KINDS: dict[str, Callable[[bytes], Any]] = {
    "bytearray": bytearray,
    "memoryview-bytearray": lambda d: memoryview(bytearray(d)),
    "memoryview-slice": _writable_padded_view,
    "mmap": _writable_mmap,
    "array-B": lambda d: array.array("B", d),
    "numpy-uint8": lambda d: np.frombuffer(d, dtype=np.uint8).copy(),
    "numpy-2d": _numpy_2d,
}


def as_bytes(obj: Any) -> bytes:
    if isinstance(obj, mmap.mmap):
        return obj[:]
    return memoryview(obj).tobytes()


def assert_gil_released(call: Callable[[], object], what: str, attempts: int = 3) -> None:
    """Fails unless this thread keeps running while `call` runs in another:
    the longest pause it sees must be far shorter than one call (it would
    not be if the GIL were held). Best of `attempts`, for loaded machines."""

    def attempt() -> tuple[float, float]:
        start = time.perf_counter()
        call()
        one_call = time.perf_counter() - start
        worker = threading.Thread(target=call)
        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-3)
        try:
            worker.start()
            last = time.perf_counter()
            longest = 0.0
            polls = 0
            while worker.is_alive():
                polls += 1
                now = time.perf_counter()
                longest = max(longest, now - last)
                last = now
            worker.join()
        finally:
            sys.setswitchinterval(old)
        # polls == 0: this thread never ran while the worker was alive (a held
        # GIL can look like that), which proves nothing.
        return (longest if polls else float("inf")), one_call

    results = []
    for _ in range(attempts):
        longest, one_call = attempt()
        results.append((longest, one_call))
        if longest < one_call / 2:
            return
    raise AssertionError(f"the GIL seems held during {what}: (longest pause, one call) = {results}")

# ---- forked children (tests/properties/test_fork.py and the chunked tests) ----------

#: Seconds a forked child may take; a healthy one takes well under one.
FORK_DEADLINE = 30.0


def wait_child(pid: int, deadline: float = FORK_DEADLINE) -> int:
    """The child's exit code; kills it and fails if it is not done in time."""
    end = time.monotonic() + deadline
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"forked child {pid} still running after {deadline:.0f} s (hung)")
        time.sleep(0.01)


def in_child(work: Callable[[], None]) -> int:
    """Runs `work` in a forked child; returns its exit code (0: success)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 1
        try:
            work()
            code = 0
        except BaseException as e:  # reported through the exit code and stderr
            try:
                print(f"child failed: {e!r}", file=sys.stderr, flush=True)
            finally:
                code = 2
        finally:
            os._exit(code)
    return wait_child(pid)


def run_in_child(work: Callable[[], bytes]) -> tuple[int, bytes]:
    """Runs `work` in a forked child; returns (exit code, what it returned,
    or b"raised: <message>" if it raised RuntimeError)."""
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_end)
            try:
                result = work()
            except RuntimeError as e:
                result = b"raised: " + str(e).encode()
            os.write(write_end, result)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            code = 2
        finally:
            os._exit(code)
    os.close(write_end)
    code = wait_child(pid)
    with os.fdopen(read_end, "rb") as f:
        return code, f.read()
