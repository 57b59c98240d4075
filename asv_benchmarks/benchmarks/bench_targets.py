"""Every row of the per-call targets table (docs/results/performance.md) as a
`track_` ratio, so the asv history shows each target commit by commit.

The rows, their cases and the measurement are the targets tool's own
(asv_benchmarks/tools/targets.py: TARGETS, `measure_targets`), not copied
here: a row reads here exactly as `measure.py targets` generates it, from
interleaved rounds (the median of the rounds' paired ratios; robust to a
loaded machine). All are time ratios, lower is better (asv's reading), so
they gate like times: for the thread row that is two threads' time over one
thread's (the table shows its inverse, the speed-up).

The tool comes from the working tree, the cb3 it times from the commit asv
installed: a commit whose cb3 lacks a call a row times is skipped for that
row. The Rust rows are skipped: their reference binary is built from the
working tree, not from the commit.
"""

from __future__ import annotations

import os
import sys
from typing import Any

# asv_benchmarks/, where the tools package lives (asv puts it on sys.path too).
_SUITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _SUITE not in sys.path:
    sys.path.insert(0, _SUITE)

#: Rounds per measurement and the seconds each case's batch is calibrated to:
#: about 1 s per 16 MiB row, well under asv's timeout.
ROUNDS = 9
BUDGET = 0.02


def _label(target: Any) -> str:
    """A row's parameter value: its size, then its ratio without the
    Markdown (`code` marks), saying so where the value is the inverse of
    the table's."""
    from cb3.cli.speed import human_size

    inverted = " (tracked as its inverse, two threads' time / one's)" if target.speedup else ""
    return f"{human_size(target.size)}: {target.what.replace('`', '')}{inverted}"


def _targets() -> dict[str, Any]:
    """The rows by label, less the Rust rows ({} where the tools do not import)."""
    try:
        from tools.targets import TARGETS
    except ImportError:
        return {}
    return {_label(target): target for target in TARGETS if not target.ours.startswith("Rust ")}


class Targets:
    params = list(_targets()) or ["(none)"]
    param_names = ["row"]
    unit = "time ratio"
    version = "1"
    timeout = 300

    def track_time_ratio(self, row: str) -> float:
        target = _targets().get(row)
        if target is None:
            raise NotImplementedError(f"no targets row {row!r}")  # asv: skipped
        from tools.targets import measure_targets

        try:
            ((_, ratios),) = measure_targets(ROUNDS, BUDGET, [target])
        except AttributeError as missing:
            raise NotImplementedError(f"{row}: this commit's cb3 lacks {missing}") from None  # asv: skipped
        if ratios is None:
            raise NotImplementedError(f"{row}: a peer is not installed")  # asv: skipped
        return 1 / ratios.median if target.speedup else ratios.median
