"""Machine details recorded with every result (asv's machine file has the
CPU model, core count, RAM and OS; these add what picks cb3's code paths,
as cb3's engine detects them).

Each `track_` is 1 when the CPU's maker / the backend is the one cb3 reports
at run time, else 0, so a change of runner shows in the graphs."""

import os
import sys

import cb3
from cb3 import _cb3

MAKERS = ["Intel", "AMD", "other"]
BACKENDS = ["avx512", "avx2", "sse4.1", "sse2", "neon", "portable"]


class Machine:
    version = "1"
    unit = "present (1) / absent (0)"

    def track_cpu_maker(self, maker: str) -> float:
        cpu_maker = getattr(_cb3, "cpu_maker", None)
        if cpu_maker is None:
            raise NotImplementedError("this commit's cb3 does not report the CPU's maker")  # asv: skipped
        return float(cpu_maker() == maker)

    track_cpu_maker.params = MAKERS  # type: ignore[attr-defined]
    track_cpu_maker.param_names = ["maker"]  # type: ignore[attr-defined]

    def track_simd_backend(self, backend: str) -> float:
        return float(cb3.simd_backend() == backend)

    track_simd_backend.params = BACKENDS  # type: ignore[attr-defined]
    track_simd_backend.param_names = ["backend"]  # type: ignore[attr-defined]


class MachineCounts:
    version = "1"

    def track_usable_cpus(self) -> float:
        return float(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0)

    track_usable_cpus.unit = "CPUs"  # type: ignore[attr-defined]

    def track_python_version(self) -> float:
        return sys.version_info[0] * 100 + sys.version_info[1]

    track_python_version.unit = "major*100 + minor"  # type: ignore[attr-defined]
