"""Every row of the per-call targets table (docs/results/performance.md) as a
`track_` ratio, so the asv history shows each target and each evidence row
(the Rust core timed without Python, `_cb3.bench_reference`) commit by commit.

The rows, their cases and the measurement are cb3's own
(`cb3.bench.targets`: TARGETS, `measure_targets`), not copied here: a row
reads here exactly as `python -m cb3 bench --targets-markdown` generates it,
from interleaved rounds (the median of the rounds' paired ratios; robust to
a loaded machine). All are time ratios, lower is better (asv's reading), so
they gate like times: for the thread row that is two threads' time over one
thread's (the table shows its inverse, the speed-up). A commit whose cb3
lacks a row (or the bench module) is skipped for it.
"""

from __future__ import annotations

from typing import Any

#: Rounds per measurement and the seconds each case's batch is calibrated to:
#: about 1 s per 16 MiB row, well under asv's timeout.
ROUNDS = 9
BUDGET = 0.02


def _label(target: Any) -> str:
    """A row's parameter value: its size, then its ratio without the
    Markdown (`code` marks), saying so where the value is the inverse of
    the table's."""
    from cb3.bench.calls import human_size

    inverted = " (tracked as its inverse, two threads' time / one's)" if target.speedup else ""
    return f"{human_size(target.size)}: {target.what.replace('`', '')}{inverted}"


def _targets() -> dict[str, Any]:
    """The installed cb3's rows by label ({} before cb3 had them)."""
    try:
        from cb3.bench.targets import TARGETS
    except ImportError:
        return {}
    return {_label(target): target for target in TARGETS}


class Targets:
    params = list(_targets()) or ["(none)"]
    param_names = ["row"]
    unit = "time ratio"
    version = "1"
    timeout = 300

    def track_time_ratio(self, row: str) -> float:
        target = _targets().get(row)
        if target is None:
            raise NotImplementedError(f"no targets row {row!r} in this commit")  # asv: skipped
        from cb3.bench.targets import measure_targets

        ((_, ratios),) = measure_targets(ROUNDS, BUDGET, [target])
        if ratios is None:
            raise NotImplementedError(f"{row}: a peer is not installed")  # asv: skipped
        return 1 / ratios.median if target.speedup else ratios.median
