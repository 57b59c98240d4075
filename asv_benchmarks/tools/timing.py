"""The timers every tool shares: a timer runs `n` calls and returns the
seconds they took; `calibrate` picks `n` for a time budget; `interleaved`
runs one batch of every timer per round, each round in a new seeded order,
so that a burst of noise on a shared machine hits all cases alike and no
case always follows the same one."""

from __future__ import annotations

import random
import time
from typing import Callable, Hashable, TypeVar

#: A timer: `n` calls, their seconds.
Timer = Callable[[int], float]

#: The clock of every timer: wall time by default; `use_clock("process")`
#: takes the process's CPU time, which leaves out the time other jobs of a
#: shared machine hold the CPU (but adds up all threads: not comparable for
#: threaded cases, which time wall clock whatever this says).
clock: Callable[[], float] = time.perf_counter
clock_name = "wall"


def use_clock(name: str) -> None:
    """Makes "wall" or "process" the clock of the timers made from now on."""
    global clock, clock_name
    if name not in ("wall", "process"):
        raise ValueError(f"clock must be 'wall' or 'process', not {name!r}")
    clock = time.process_time if name == "process" else time.perf_counter
    clock_name = "process CPU" if name == "process" else "wall"


def loop(call: Callable[[], object], wall: bool = False) -> Timer:
    """A timer of `n` calls of `call`, on `clock` (on wall time if `wall`)."""

    def run(n: int) -> float:
        now = time.perf_counter if wall else clock
        start = now()
        for _ in range(n):
            call()
        return now() - start

    return run


def calibrate(timer: Timer, budget: float) -> int:
    """A call count whose batch takes about `budget` seconds."""
    n = 1
    while True:
        elapsed = timer(n)
        if elapsed >= budget / 10 or n >= 1 << 24:
            return max(1, int(n * budget / max(elapsed, 1e-9)))
        n *= 10


def warm_up(timer: Timer, seconds: float) -> None:
    """Runs `timer` for about `seconds` of wall time (PyPy's JIT, and its GC
    heap growing to a steady size)."""
    n, end = 1, time.perf_counter() + seconds
    while time.perf_counter() < end:
        timer(n)
        n = min(n * 2, 1 << 16)


Key = TypeVar("Key", bound=Hashable)


def interleaved(timers: dict[Key, Timer], counts: dict[Key, int], rounds: int, warm: bool = False) -> dict[Key, list[float]]:
    """Seconds per call of each timer (`counts[key]` calls per batch), one
    batch of every timer per round. Each round runs the batches in a new
    random order (seeded: the same orders in every run), so that no case
    always follows the same one: a large case right after the case that
    wrote its output buffer finds that buffer in cache
    (docs/performance.md, "How the bench orders cases"). With `warm`, an untimed call starts each
    batch."""
    order = list(timers)
    shuffler = random.Random(0)
    samples: dict[Key, list[float]] = {key: [] for key in order}
    for _ in range(rounds):
        shuffler.shuffle(order)
        for key in order:
            if warm:
                timers[key](1)
            samples[key].append(timers[key](counts[key]) / counts[key])
    return samples
