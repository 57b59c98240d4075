"""The `chacha20-blake3` crate and cb3's Rust core timed in Rust, no Python:
the dev binary `cb3-bench-reference` of the rustlib workspace, run as one
co-process per tool run so its timers interleave with the Python-level
ones (`lambda n: reference.time(mode, size, n)`).

Build it with

    cargo build --release --locked --manifest-path rustlib/Cargo.toml -p cb3-bench

(binary rustlib/target/release/cb3-bench-reference; the environment
variable CB3_BENCH_REFERENCE names another path). Protocol: one request a
line on its stdin, `MODE MESSAGE_LEN ITERATIONS`; one answer a line, the
elapsed wall time in nanoseconds; a malformed request gets a line starting
`error:` and the binary exits with status 2. Where the binary is not built,
its cases are left out like a peer that is not installed.
"""

from __future__ import annotations

import atexit
import os
import subprocess
from pathlib import Path
from typing import IO, Callable, Optional

from .timing import Timer

ROOT = Path(__file__).resolve().parents[2]
BUILD = "cargo build --release --locked --manifest-path rustlib/Cargo.toml -p cb3-bench"

#: The modes, as the binary spells them.
MODES = ("encrypt", "encrypt_in_place", "decrypt", "seal", "parts", "seal_xor", "seal_xor_copying")


def binary() -> Path:
    """Where the binary is looked for."""
    override = os.environ.get("CB3_BENCH_REFERENCE")
    return Path(override) if override else ROOT / "rustlib" / "target" / "release" / "cb3-bench-reference"


class Reference:
    """The running binary: started on first use, ended when the tool exits."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.process: Optional[subprocess.Popen[str]] = None

    def time(self, mode: str, size: int, n: int) -> float:
        """Seconds of `n` calls of `mode` on a `size`-byte message."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if self.process is None:
            self.process = subprocess.Popen(
                [str(self.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
            )
            atexit.register(self.close)
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(f"{mode} {size} {n}\n")
        stdin.flush()
        answer = stdout.readline().strip()
        if not answer.isdigit():
            raise RuntimeError(f"{self.path}: {mode} {size} {n}: {answer or 'no answer'}")
        return int(answer) / 1e9

    def close(self) -> None:
        if self.process is not None:
            process, self.process = self.process, None
            for stream in (process.stdin, process.stdout):
                _close(stream)
            process.wait()


def _close(stream: Optional[IO[str]]) -> None:
    if stream is not None:
        stream.close()


_running: Optional[Reference] = None


def available() -> bool:
    """Whether the binary is built (an executable file where `binary()` says)."""
    return os.access(binary(), os.X_OK)


def timers(mode: str) -> Callable[[int], Timer]:
    """Timers, per message size, of the binary's `mode`."""
    global _running
    if _running is None:
        _running = Reference(binary())
    reference = _running
    return lambda size: lambda n: reference.time(mode, size, n)

