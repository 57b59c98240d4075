"""Waiting without stalling the interpreter (issue 10, items 4 and 7).

- A small call on a shared blake3, Stream or ChaCha20 whose lock another
  thread holds waits for it with the GIL released (rustlib's wait hooks,
  CB3_LOCKING in cext/buffers.h), as hashlib does: other threads go on, and
  update_mmap() of a FIFO fed by a Python thread plus digest() on the same
  hasher cannot deadlock.
- blake3.update_mmap() and b3sum read files that never end (/dev/zero,
  /dev/urandom, FIFOs) in chunks and run Python's signal handlers in
  between: Ctrl-C (SIGINT) raises KeyboardInterrupt.

Anything that could hang runs in a subprocess with a deadline, so a failure
cannot block the suite."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

import cb3
import cb3.chacha20
from helpers import signals_at_default

CB3_PARENT = str(Path(cb3.__file__).resolve().parent.parent)
ENV = {**os.environ, "PYTHONPATH": CB3_PARENT}
KEY = bytes(range(32))
DEADLINE = 60.0

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")


def run_script(code: str, timeout: float = DEADLINE) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=ENV,
            cwd=CB3_PARENT,  # `python -c` puts the working directory first on sys.path
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"deadlocked: still running after {timeout:.0f} s\n{e.stdout!r}\n{e.stderr!r}")


def test_fifo_update_mmap_and_digest_do_not_deadlock(tmp_path: Path) -> None:
    """Thread A hashes a FIFO (holding the hasher's lock, waiting for data);
    the main thread starts a Python thread that feeds the FIFO, then asks
    for digest(). digest() used to wait for the lock with the GIL held, so
    the feeder never ran: the process hung."""
    result = run_script(
        f"""
        import os, threading, time, cb3
        fifo = {str(tmp_path / "fifo")!r}
        os.mkfifo(fifo)
        hasher = cb3.blake3()
        reader = threading.Thread(target=hasher.update_mmap, args=(fifo,))
        reader.start()
        time.sleep(0.3)  # the reader holds the lock, blocked in open()
        def feed():
            with open(fifo, "wb") as f:
                f.write(b"fed by a Python thread")
        threading.Thread(target=feed).start()
        print(hasher.hexdigest())
        reader.join()
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == cb3.blake3(b"fed by a Python thread").hexdigest()


# A region of memory whose first read blocks until the test releases it
# (userfaultfd): a large call on it holds the object's lock for as long as
# the test wants, deterministically, with the GIL released.
USERFAULTFD = """
import ctypes, mmap, os, platform, struct, time
SYSCALL = {"x86_64": 323, "aarch64": 282}[platform.machine()]
UFFDIO_API, UFFDIO_REGISTER, UFFDIO_ZEROPAGE = 0xC018AA3F, 0xC020AA00, 0xC020AA04
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_char_p]

def ioctl(fd, request, payload):
    buffer = ctypes.create_string_buffer(payload, len(payload))
    if libc.ioctl(fd, request, buffer) != 0:
        raise OSError(ctypes.get_errno(), "ioctl")
    return buffer.raw

class Stall:
    # SIZE bytes whose first read blocks until release().
    SIZE = 1 << 16
    def __init__(self):
        self.fd = libc.syscall(SYSCALL, os.O_CLOEXEC | os.O_NONBLOCK)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "userfaultfd")
        ioctl(self.fd, UFFDIO_API, struct.pack("QQQ", 0xAA, 0, 0))
        self.map = mmap.mmap(-1, self.SIZE)
        self.address = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        ioctl(self.fd, UFFDIO_REGISTER, struct.pack("QQQQ", self.address, self.SIZE, 1, 0))
    def wait_for_fault(self):
        while True:
            try:
                return os.read(self.fd, 32)
            except BlockingIOError:
                time.sleep(0.001)
    def release(self):
        ioctl(self.fd, UFFDIO_ZEROPAGE, struct.pack("QQQq", self.address, self.SIZE, 0, 0))
"""

WAIT_SCRIPT = USERFAULTFD + """
import sys, threading, cb3, cb3.chacha20
kind = KIND
stall = Stall()
view = memoryview(stall.map)
key = bytes(32)
if kind == "blake3":
    obj = cb3.blake3()
    long_call, small_call = (lambda: obj.update(view)), (lambda: obj.update(b"x"))
elif kind == "Stream":
    obj = cb3.Stream(key, bytes(24))
    long_call, small_call = (lambda: obj.encrypt(view)), (lambda: obj.encrypt(b"x"))
else:
    obj = cb3.chacha20.ChaCha20(key, bytes(12))
    long_call, small_call = (lambda: obj.update(view)), (lambda: obj.update(b"x"))
holder = threading.Thread(target=long_call)
holder.start()
stall.wait_for_fault()  # the holder is inside Rust, holding the lock, GIL released
calling = threading.Event()
def wait():
    calling.set()
    small_call()  # must wait for the lock
waiter = threading.Thread(target=wait)
waiter.start()
calling.wait()
time.sleep(0.3)  # the waiter reaches the lock; holding the GIL there, it stalled us for good
print("main ran while the waiter waited:", waiter.is_alive(), flush=True)
stall.release()
holder.join()
waiter.join()
print("done", flush=True)
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="userfaultfd numbers for x86_64/aarch64")
@pytest.mark.skipif(
    sys.implementation.name == "pypy",
    reason="PyPy: buffers borrowed through cpyext are not pinned, so every call with a buffer keeps the GIL "
    "(the holder here too); the buffer-free FIFO test covers PyPy",
)
@pytest.mark.parametrize("kind", ["blake3", "Stream", "ChaCha20"])
def test_a_waiting_small_call_releases_the_gil(kind: str) -> None:
    """A thread is inside a large call on the object (lock held, GIL
    released), its input blocked in a page fault that the test resolves;
    another thread makes a small call on the object, which must wait for the
    lock. The main thread must keep running meanwhile: before the fix the
    waiting thread held the GIL, and the process hung."""
    probe = run_script(USERFAULTFD + "Stall()")
    if probe.returncode != 0:
        error = (probe.stderr.strip().splitlines() or ["no output"])[-1]  # the exception, not its traceback
        pytest.skip(f"userfaultfd unavailable (needs root or vm.unprivileged_userfaultfd=1): {error}")
    result = run_script(WAIT_SCRIPT.replace("KIND", repr(kind)))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "main ran while the waiter waited: True\ndone\n"


# ---- Ctrl-C during a read that never ends ----------------------------------


def _interrupt(argv: list[str], ready: str, pause: float = 0.5) -> subprocess.CompletedProcess[str]:
    """Starts argv, waits for `ready` on its stdout, lets it get into the
    read, sends SIGINT; returns the finished process (fails after DEADLINE)."""
    process = subprocess.Popen(
        argv, env=ENV, cwd=CB3_PARENT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=signals_at_default,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip() == ready, (line, process.stderr.read() if process.stderr else "")
        time.sleep(pause)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"{argv}: still running {DEADLINE:.0f} s after SIGINT (signals ignored)")
    return subprocess.CompletedProcess(argv, process.returncode, line + out, err)


# PyPy 7.3.19's cpyext PyErr_CheckSignals does not run the Python signal
# handlers from C (measured: SIGINT is ignored until the read ends), so an
# endless read cannot be interrupted there yet.
CPYTHON_SIGNALS = pytest.mark.skipif(
    sys.implementation.name == "pypy",
    reason="PyPy: PyErr_CheckSignals from C does not run Python signal handlers (Ctrl-C not handled during the read)",
)

UPDATE_MMAP = """
import sys, cb3
hasher = cb3.blake3(max_threads=int(sys.argv[2]))
print("ready", flush=True)
try:
    hasher.update_mmap(sys.argv[1])
except KeyboardInterrupt:
    print("KeyboardInterrupt after", hasher.copy().digest() and "some input", flush=True)
    sys.exit(3)
print("returned", flush=True)
"""


@CPYTHON_SIGNALS
@pytest.mark.parametrize("threads", [1, cb3.AUTO])
@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom"])
def test_ctrl_c_stops_update_mmap_of_an_endless_device(path: str, threads: int) -> None:
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    result = _interrupt([sys.executable, "-c", UPDATE_MMAP, path, str(threads)], "ready")
    assert result.returncode == 3, result.stderr
    assert "KeyboardInterrupt after" in result.stdout


@CPYTHON_SIGNALS
def test_ctrl_c_stops_update_mmap_of_a_fifo_without_writer(tmp_path: Path) -> None:
    """Blocked in open() (no writer yet): EINTR reaches the signal check."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = _interrupt([sys.executable, "-c", UPDATE_MMAP, str(fifo), "1"], "ready")
    assert result.returncode == 3, result.stderr


@CPYTHON_SIGNALS
def test_ctrl_c_stops_update_mmap_of_an_endless_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"exec cat /dev/zero > '{fifo}'"])
    try:
        result = _interrupt([sys.executable, "-c", UPDATE_MMAP, str(fifo), "1"], "ready")
    finally:
        writer.kill()
        writer.wait()
    assert result.returncode == 3, result.stderr


def test_update_mmap_of_a_fifo_still_hashes_everything(tmp_path: Path) -> None:
    """Chunked reads give the same digest as one update()."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = os.urandom(3 * 65536 + 123)

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    feeder = threading.Thread(target=feed)
    feeder.start()
    hasher = cb3.blake3(key=KEY).update_mmap(fifo)
    feeder.join(DEADLINE)
    assert hasher.digest() == cb3.blake3(data, key=KEY).digest()


@CPYTHON_SIGNALS
@pytest.mark.parametrize("argv", [["/dev/zero"], ["--num-threads", "1", "/dev/urandom"]])
def test_ctrl_c_stops_b3sum(argv: list[str]) -> None:
    """b3sum on an endless device: Ctrl-C ends it (exit status 130, as a
    shell reports a SIGINT death) instead of reading forever."""
    script = "import sys; from cb3.cli.b3sum import main; print('ready', flush=True); sys.exit(main(sys.argv[1:]))"
    result = _interrupt([sys.executable, "-c", script, *argv], "ready")
    assert result.returncode == 130, result.stderr
    assert result.stdout.strip() == "ready"
