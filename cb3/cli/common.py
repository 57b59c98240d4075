"""What the commands of ``python -m cb3`` share: the exit statuses, the
progress bar, sizes for people, and what to do when the reader of stdout
goes away."""

from __future__ import annotations

import os
import sys
import time

#: Exit statuses: success; a failure the command reports (a tampered or
#: invalid stream, a checksum mismatch, an unreadable input, stdout gone);
#: a usage error; an I/O error (encrypt/decrypt); interrupted (SIGINT). A
#: terminating signal N gives 128 + N.
EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_IO, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def stdout_went_away() -> int:
    """What a command does when its reader goes away (`python -m cb3 | head`):
    stop quietly, with stdout pointed at /dev/null so that the interpreter's
    flush at exit does not complain again. Returns the exit status, 1."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (e.g. captured)
        pass
    return EXIT_FAILURE


class Progress:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self, name: str, total: int) -> None:
        self.name, self.total, self.start, self.shown = name, total, time.monotonic(), 0.0

    def update(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.shown < 0.1:
            return
        self.shown = now
        fraction = done / self.total if self.total else 1.0
        width = 30
        filled = int(width * fraction)
        rate = done / max(now - self.start, 1e-9) / 2**20
        bar = "#" * filled + "-" * (width - filled)
        line = f"\r{self.name} [{bar}] {fraction:4.0%} {done / 2**20:,.0f}/{self.total / 2**20:,.0f} MiB {rate:,.0f} MiB/s"
        sys.stderr.write(line)
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


def human_size(size: int) -> str:
    """A byte count in the largest binary unit that divides it ("64 KiB")."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"
