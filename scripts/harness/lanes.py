"""Background lanes: work that no step waits for right away (downloads,
chroots, wheel builds, valgrind) runs in a thread beside the steps, its
output in .test/lane-NAME.log, shown when a step waits for it. A lane's
processes are ended if the run stops early. Each step still makes sure of
its own part (a no-op when the lane did it), so a failed lane costs time,
not correctness."""

from __future__ import annotations

import atexit
import threading
import time
import traceback
from typing import Callable

from .core import WORK, children_cpu, end_children, output_to, say

_lanes: dict[str, "Lane"] = {}


class Lane:
    def __init__(self, name: str, work: Callable[[], object]) -> None:
        self.name, self.log = name, WORK / f"lane-{name}.log"
        self.ok: bool | None = None
        self.result: object = None
        self.started = time.monotonic()
        WORK.mkdir(exist_ok=True)
        self._thread = threading.Thread(target=self._run, args=(work,), name=f"lane-{name}", daemon=True)
        self._thread.start()
        say(f"background lane '{name}' started (log: {self.log})")

    def _run(self, work: Callable[[], object]) -> None:
        with open(self.log, "w", encoding="utf-8") as log, output_to(log):
            try:
                self.result = work()
                self.ok = self.result is not False
            except BaseException:  # noqa: BLE001 -- reported in the log, and by wait()
                traceback.print_exc(file=log)
                self.ok = False
            say(f"{'done' if self.ok else 'FAILED'} after {time.monotonic() - self.started:.0f} s")


def start(name: str, work: Callable[[], object]) -> Lane:
    lane = _lanes[name] = Lane(name, work)
    return lane


def running(name: str) -> bool:
    return name in _lanes


def wait(name: str) -> bool | None:
    """Waits for lane `name` and shows its log; its result (None: no such lane)."""
    lane = _lanes.pop(name, None)
    if lane is None:
        return None
    cpu = children_cpu()
    lane._thread.join()
    for line in lane.log.read_text(errors="replace").splitlines():
        say(f"    lane {name}: {line}")
    say(f"    lane {name}: CPU {children_cpu() - cpu:.0f} s while waited for")
    return lane.ok


@atexit.register
def _end() -> None:
    if any(lane._thread.is_alive() for lane in _lanes.values()):
        end_children()
