"""Concurrent writers into the memory under a call (issue #10, items 1-2).

Two realistic attackers: another Python thread writing a bytearray while cb3
has released the GIL, and another process writing a MAP_SHARED file mapping
that this process hands to cb3. The promises under test
(docs/security-testing.md, "Concurrent writers"):

- decryption reads every ciphertext byte exactly once, so a decrypt that
  succeeds returns exactly the plaintext of the ciphertext it authenticated:
  a byte changed during the call either makes the tag fail or is not used;
- unverified plaintext never reaches a caller's buffer (decrypt_into,
  decrypt_in_place): on failure the buffer holds what it held, plus only the
  attacker's own writes;
- the tag of an encryption covers the ciphertext cb3 produced, not bytes a
  writer put into the output buffer while the call ran.

Two kinds of attack, so that the old code fails every time, not by luck:

- where cb3's progress is visible (an output buffer the attacker can read),
  the attacker waits until cb3 has written a byte, then writes one byte
  further on: into the ciphertext that the old code was about to read a
  second time (decrypt_into, decrypt_in_place), or into the ciphertext the
  old code had just written and was about to MAC (encrypt_into,
  encrypt_in_place);
- where the output is private (decrypt, decrypt_detached, Stream.decrypt),
  the attacker flips one ciphertext byte back and forth for the whole test,
  so that the old code's two reads disagree in about a quarter of the calls.
"""

from __future__ import annotations

import mmap
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import pytest

import cb3

KEY = bytes(range(200, 232))
NONCE = bytes(range(60, 84))
AAD = b"shared-memory header"
SIZE = 1 << 20  # reaches the multi-threaded path (1 MiB); releases the GIL
TRIALS = 16  # per attack that waits for cb3 (each one failed the old code when the writer was on a core)
# Flipping: the old code's two reads of the byte were half a call apart and
# failed when they disagreed, about 1 call in 4 once the call is long enough
# for the writer to get a core in between on a loaded machine (2 MiB).
FLIP_SIZE = 2 << 20
FLIP_TRIALS = 24
# ... and more, up to this many, until a flip has landed during a call: on a
# machine loaded by other jobs the writer may not get its core in the first 24.
FLIP_TRIALS_MAX = 1000
# Encryption: the old code wrote a piece of ciphertext, then MACed it; the
# watched byte is near the end, so that the writer is up and watching by then.
ENCRYPT_SIZE = 4 << 20
PYPY = platform.python_implementation() == "PyPy"

SINGLE = cb3.ChaCha20Blake3(KEY)
SPLIT = cb3.ChaCha20Blake3(KEY, max_threads=2)
PLAINTEXT = random.Random(10).randbytes(SIZE)
SEALED = SPLIT.encrypt(NONCE, PLAINTEXT, AAD)  # also starts SPLIT's pool before any pinning (below)
CT, TAG = SEALED[:SIZE], SEALED[SIZE:]
BIG_PLAINTEXT = random.Random(11).randbytes(FLIP_SIZE)
BIG_SEALED = SINGLE.encrypt(NONCE, BIG_PLAINTEXT, AAD)
BIG_STREAM_SEALED = cb3.Stream(KEY, NONCE).encrypt(BIG_PLAINTEXT, AAD)
# Both in the second half (the second segment of a 2-thread split), 192 KiB
# apart: time enough for an attacker who sees cb3 pass WATCH to write at
# INDEX before cb3 gets there.
WATCH = SIZE // 2 + (64 << 10)
INDEX = SIZE // 2 + (256 << 10)
FLIP_INDEX = (256 << 10) + 777  # early: read by the MAC at once, by the XOR half a call later
DELTA = 0x5A
SENTINEL = 0xA5
ENCRYPT_PLAINTEXT = random.Random(12).randbytes(ENCRYPT_SIZE)
ENCRYPT_CT, ENCRYPT_TAG = SINGLE.encrypt_detached(NONCE, ENCRYPT_PLAINTEXT, AAD)
ENCRYPT_INDEX = ENCRYPT_SIZE - (64 << 10) - 3
assert len({PLAINTEXT[WATCH], CT[WATCH], SENTINEL, 0}) == 4
assert len({PLAINTEXT[INDEX], CT[INDEX], PLAINTEXT[INDEX] ^ DELTA, CT[INDEX] ^ DELTA, 0}) == 5


# ---- attacks -------------------------------------------------------------------


@dataclass
class Flip:
    """Writes `values` at `index` in turn, for as long as the test runs."""

    index: int
    values: tuple[int, int]


@dataclass
class AfterWrite:
    """Once per call: waits until the byte at `watch` is no longer `before`
    (cb3 wrote it) or the call has returned, then writes `value` at `index`."""

    watch: int
    before: int
    index: int
    value: int


Attack = Any  # Flip | AfterWrite


class ThreadAttacker:
    """A Python thread: it can only run while cb3 has released the GIL."""

    def __init__(self, buf: bytearray, attack: Attack) -> None:
        self.buf, self.attack = buf, attack
        self.go, self.done = threading.Event(), threading.Event()
        self.stop = self.finished = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        buf, attack = self.buf, self.attack
        if isinstance(attack, Flip):
            # Flips only while a call runs, so that the test's own Python code
            # between calls does not wait for the GIL.
            index, (a, b) = attack.index, attack.values
            while not self.stop:
                self.go.wait()
                while self.go.is_set() and not self.stop:
                    for _ in range(100):
                        buf[index] = a
                        buf[index] = b
            return
        while True:
            self.go.wait()
            self.go.clear()
            if self.stop:
                return
            watch, before = attack.watch, attack.before
            while buf[watch] == before and not self.finished:
                pass
            buf[attack.index] = attack.value
            self.done.set()

    def before_call(self) -> None:
        self.finished = False
        self.done.clear()
        self.go.set()

    def after_call(self) -> None:
        self.finished = True
        if isinstance(self.attack, Flip):
            self.go.clear()
        else:
            assert self.done.wait(30), "the attacking thread did not write"

    def close(self) -> None:
        self.stop = self.finished = True
        self.go.set()
        self.thread.join(30)


# The other process. Control bytes (on their own page): +0 turn (set by the
# parent before a call), +1 turn done (by the child), +2 ready, +3 stop,
# +4 the call has returned.
_CHILD = r"""
import mmap, sys
path, control, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
args = [int(x) for x in sys.argv[4:]]
with open(path, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
m[control + 2] = 1
if kind == "flip":
    index, a, b = args
    while not m[control + 3]:
        for _ in range(1000):
            m[index] = a
            m[index] = b
    sys.exit(0)
watch, before, index, value = args
turn = 0
while True:
    turn = turn % 250 + 1
    while m[control] != turn:
        if m[control + 3]:
            sys.exit(0)
    while m[watch] == before and not m[control + 4]:
        pass
    m[index] = value
    m[control + 1] = turn
"""


class ProcessAttacker:
    """Another process writing the same file through its own MAP_SHARED mapping."""

    def __init__(self, path: str, mapping: mmap.mmap, control: int, attack: Attack) -> None:
        self.m, self.control, self.attack, self.turn = mapping, control, attack, 0
        if isinstance(attack, Flip):
            args = ["flip", attack.index, *attack.values]
        else:
            args = ["after-write", attack.watch, attack.before, attack.index, attack.value]
        self.child = subprocess.Popen([sys.executable, "-c", _CHILD, path, str(control), *map(str, args)])
        deadline = time.monotonic() + 60
        while self.m[control + 2] != 1:
            self._alive(deadline, "start")
            time.sleep(0.001)

    def _alive(self, deadline: float, what: str) -> None:
        assert self.child.poll() is None, "the writer process died"
        assert time.monotonic() < deadline, f"the writer process did not {what}"

    def before_call(self) -> None:
        if isinstance(self.attack, AfterWrite):
            self.turn = self.turn % 250 + 1
            self.m[self.control + 4] = 0
            self.m[self.control] = self.turn

    def after_call(self) -> None:
        if isinstance(self.attack, AfterWrite):
            self.m[self.control + 4] = 1
            deadline = time.monotonic() + 30
            while self.m[self.control + 1] != self.turn:
                self._alive(deadline, "write")
                time.sleep(0)

    def close(self) -> None:
        self.m[self.control + 3] = 1
        try:
            self.child.wait(30)
        finally:
            if self.child.poll() is None:
                self.child.kill()
                self.child.wait()


# ---- what is attacked ------------------------------------------------------------


@dataclass
class Route:
    """One API call over a shared buffer that starts as `initial`."""

    initial: bytes
    call: Callable[[Any], Any]  # gets the shared buffer, returns what `check` reads
    check: Callable[[bytes, Any, Optional[Exception]], None]  # (shared bytes after, result, DecryptionError)
    attack: Attack


def _diff(got: bytes, want: bytes) -> str:
    if len(got) != len(want):
        return f"{len(got)} bytes instead of {len(want)}"
    first = 0
    while got[first : first + 4096] == want[first : first + 4096]:
        first += 4096
    while got[first] == want[first]:
        first += 1
    return f"byte {first} is {got[first]:#04x}, not {want[first]:#04x}"


def _equal_except(got: bytes, want: bytes, allowed: set[int], what: str) -> None:
    assert got[:INDEX] == want[:INDEX] and got[INDEX + 1 :] == want[INDEX + 1 :], f"{what}: {_diff(got, want)}"
    assert got[INDEX] in allowed, f"{what}: byte {INDEX} is {got[INDEX]:#04x}, allowed {sorted(allowed)}"


def _expect_big_plaintext(_: bytes, result: Any, error: Optional[Exception]) -> None:
    if error is None:
        what = "a decrypt succeeded with other bytes than the plaintext"
        assert result == BIG_PLAINTEXT, f"{what}: {_diff(result, BIG_PLAINTEXT)}"


def _allocating(route: Callable[[Any], Any], initial: bytes) -> Route:
    """A call with a private output: the writer flips one ciphertext byte."""
    # Each burst ends on the genuine byte, so that a writer that is not
    # running leaves the ciphertext intact (the MAC's read then succeeds).
    flip = Flip(FLIP_INDEX, (initial[FLIP_INDEX] ^ DELTA, initial[FLIP_INDEX]))
    return Route(initial, route, _expect_big_plaintext, flip)


def _decrypt_into(cipher: cb3.ChaCha20Blake3) -> Route:
    """Ciphertext || tag, then the output buffer, both in shared memory."""
    sealed_len = SIZE + 32

    def call(shared: Any) -> None:
        view = memoryview(shared)
        cipher.decrypt_into(NONCE, view[:sealed_len], AAD, view[sealed_len:])

    def check(after: bytes, _: Any, error: Optional[Exception]) -> None:
        sealed, out = after[:sealed_len], after[sealed_len:]
        if error is None:
            assert out == PLAINTEXT, f"decrypt_into succeeded with other bytes than the plaintext: {_diff(out, PLAINTEXT)}"
        else:
            assert out == bytes([SENTINEL]) * SIZE, "decrypt_into failed but wrote into buf"
        _equal_except(sealed, SEALED, {CT[INDEX], CT[INDEX] ^ DELTA}, "the input changed")

    # The old code MACed the input, then copied and decrypted it piece by
    # piece into buf: once buf[WATCH] changes, input[INDEX] is still to be read.
    attack = AfterWrite(sealed_len + WATCH, SENTINEL, INDEX, CT[INDEX] ^ DELTA)
    return Route(SEALED + bytes([SENTINEL]) * SIZE, call, check, attack)


def _decrypt_in_place(cipher: cb3.ChaCha20Blake3) -> Route:
    def check(after: bytes, _: Any, error: Optional[Exception]) -> None:
        forged = CT[INDEX] ^ DELTA
        if error is None:
            # Only the attacker's own write, after cb3 wrote the plaintext there, may remain.
            what = "decrypt_in_place succeeded with other bytes than the plaintext"
            _equal_except(after, PLAINTEXT, {PLAINTEXT[INDEX], forged}, what)
        else:
            _equal_except(after, CT, {forged}, "decrypt_in_place failed but wrote into buf")

    # The old code MACed buf, then decrypted it in place: once buf[WATCH]
    # holds plaintext, buf[INDEX] is still to be read.
    attack = AfterWrite(WATCH, CT[WATCH], INDEX, CT[INDEX] ^ DELTA)
    return Route(CT, lambda s: cipher.decrypt_in_place(NONCE, s, TAG, AAD), check, attack)


def _encrypt_into(cipher: cb3.ChaCha20Blake3) -> Route:
    def check(after: bytes, _: Any, error: Optional[Exception]) -> None:
        assert error is None
        assert after[ENCRYPT_SIZE:] == ENCRYPT_TAG, "encrypt_into returned a tag over bytes it did not produce"

    # The old code wrote the ciphertext into buf, then MACed buf: once
    # buf[i] holds ciphertext, change it before the MAC reads it.
    i = ENCRYPT_INDEX
    attack = AfterWrite(i, 0, i, ENCRYPT_CT[i] ^ DELTA)
    call = lambda s: cipher.encrypt_into(NONCE, ENCRYPT_PLAINTEXT, AAD, s)  # noqa: E731
    return Route(bytes(ENCRYPT_SIZE + 32), call, check, attack)


_MODIFIED = bytearray(ENCRYPT_PLAINTEXT)
_MODIFIED[ENCRYPT_INDEX] ^= DELTA
_TAG_OF_MODIFIED = SINGLE.encrypt_detached(NONCE, bytes(_MODIFIED), AAD)[1]


def _encrypt_in_place(cipher: cb3.ChaCha20Blake3) -> Route:
    def check(_: bytes, tag: bytes, error: Optional[Exception]) -> None:
        assert error is None
        # A write before cb3 read the plaintext byte is a different message.
        assert tag in (ENCRYPT_TAG, _TAG_OF_MODIFIED), "encrypt_in_place returned a tag over bytes it did not produce"

    i = ENCRYPT_INDEX
    attack = AfterWrite(i, ENCRYPT_PLAINTEXT[i], i, ENCRYPT_PLAINTEXT[i] ^ DELTA)
    return Route(ENCRYPT_PLAINTEXT, lambda s: cipher.encrypt_in_place(NONCE, s, AAD), check, attack)


ROUTES: dict[str, Route] = {
    "decrypt": _allocating(lambda s: SINGLE.decrypt(NONCE, s, AAD), BIG_SEALED),
    "decrypt-max_threads-2": _allocating(lambda s: SPLIT.decrypt(NONCE, s, AAD), BIG_SEALED),
    "decrypt_detached": _allocating(
        lambda s: SINGLE.decrypt_detached(NONCE, s, BIG_SEALED[FLIP_SIZE:], AAD), BIG_SEALED[:FLIP_SIZE]
    ),
    "Stream.decrypt": _allocating(lambda s: cb3.Stream(KEY, NONCE).decrypt(s, AAD), BIG_STREAM_SEALED),
    "decrypt_into": _decrypt_into(SINGLE),
    "decrypt_into-max_threads-2": _decrypt_into(SPLIT),
    "decrypt_in_place": _decrypt_in_place(SINGLE),
    "decrypt_in_place-max_threads-2": _decrypt_in_place(SPLIT),
    "encrypt_into": _encrypt_into(SINGLE),
    "encrypt_into-max_threads-2": _encrypt_into(SPLIT),
    "encrypt_in_place": _encrypt_in_place(SINGLE),
    "encrypt_in_place-max_threads-2": _encrypt_in_place(SPLIT),
}


@contextmanager
def separate_cores(attacker_id: Callable[[], int]) -> Iterator[None]:
    """Runs every thread of this process on one core and the attacker (a
    thread or process id) on another, at a higher priority where allowed:
    the attack then never waits for a core that cb3 holds, so it lands on
    time even on a loaded machine."""
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        yield
        return
    original = os.sched_getaffinity(0)
    ours, theirs = sorted(original)[:2]

    def pin_all(cpus: set[int]) -> None:
        for task in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(task), cpus)
            except OSError:  # the task ended meanwhile
                pass

    pin_all({ours})
    try:
        os.sched_setaffinity(attacker_id(), {theirs})
        try:
            # Ahead of other work on its core (allowed to root, as in CI).
            os.setpriority(os.PRIO_PROCESS, attacker_id(), -10)
        except (OSError, AttributeError):
            pass
        yield
    finally:
        pin_all(original)


def _run_trials(route: Route, shared: Any, attacker: Any) -> None:
    """`shared` is the buffer (a bytearray, or a memoryview of the mapping)."""
    flipping = isinstance(route.attack, Flip)
    failures = trials = 0
    while trials < (FLIP_TRIALS if flipping else TRIALS) or (flipping and not failures and trials < FLIP_TRIALS_MAX):
        trials += 1
        shared[:] = route.initial
        attacker.before_call()
        result: Any = None
        error: Optional[Exception] = None
        try:
            result = route.call(shared)
        except cb3.DecryptionError as caught:
            error = caught
            failures += 1
        attacker.after_call()
        route.check(bytes(shared), result, error)
    if flipping:
        # The tag fails when cb3 reads the flipped byte: proof that the writes
        # did happen during calls (else this test would prove nothing).
        assert failures > 0, f"the flipping writer never changed a byte during {trials} calls"


@pytest.mark.skipif(
    PYPY,
    reason="PyPy keeps the GIL during calls on mutable buffers (it cannot lock their export, cext/buffers.c), "
    "so no other Python thread can write during a call; the MAP_SHARED test below covers PyPy",
)
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_thread_writing_a_bytearray(name: str) -> None:
    route = ROUTES[name]
    shared = bytearray(route.initial)
    # A flipping thread holds the GIL while cb3 does not need it: let it go
    # often, so that the calls between cb3 calls do not wait 5 ms for it.
    old = sys.getswitchinterval()
    if isinstance(route.attack, Flip):
        sys.setswitchinterval(1e-4)
    attacker = ThreadAttacker(shared, route.attack)
    try:
        with separate_cores(lambda: attacker.thread.native_id or 0):
            _run_trials(route, shared, attacker)
    finally:
        attacker.close()
        sys.setswitchinterval(old)


@pytest.fixture(scope="module")
def shared_file() -> Iterator[tuple[str, mmap.mmap]]:
    page = mmap.PAGESIZE
    data = max(len(route.initial) for route in ROUTES.values())
    size = (data + page - 1) // page * page + page  # the data, then a control page
    with tempfile.NamedTemporaryFile(prefix="cb3-shared-") as f:
        f.truncate(size)
        f.flush()
        mapping = mmap.mmap(f.fileno(), size, flags=mmap.MAP_SHARED)
        try:
            yield f.name, mapping
        finally:
            mapping.close()


@pytest.mark.skipif(os.name != "posix" or not hasattr(mmap, "MAP_SHARED"), reason="needs POSIX MAP_SHARED")
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_process_writing_a_shared_mapping(name: str, shared_file: tuple[str, mmap.mmap]) -> None:
    path, mapping = shared_file
    route = ROUTES[name]
    control = len(mapping) - mmap.PAGESIZE
    mapping[control : control + 8] = bytes(8)
    shared = memoryview(mapping)[: len(route.initial)]
    try:
        attacker = ProcessAttacker(path, mapping, control, route.attack)
        try:
            with separate_cores(lambda: attacker.child.pid):
                _run_trials(route, shared, attacker)
        finally:
            attacker.close()
    finally:
        shared.release()
