"""Machine details recorded with every result (asv's machine file has the
CPU model, core count, RAM and OS; these add what picks cb3's code paths).

Each `track_` is 1 when the CPU flag is present / the backend is the one cb3
chose at run time, else 0, so a change of runner shows in the graphs."""

import os
import sys

import cb3

FLAGS = ["sse2", "ssse3", "sse4_1", "avx", "avx2", "avx512f", "avx512vl", "avx512bw",
         "bmi2", "adx", "aes", "vaes", "pclmulqdq", "vpclmulqdq", "sha_ni", "asimd"]
BACKENDS = ["avx512", "avx2", "sse4.1", "sse2", "neon", "portable"]


def _cpu_flags() -> set:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    raise NotImplementedError("no /proc/cpuinfo on this system")  # asv: skipped


class Machine:
    version = "1"
    unit = "present (1) / absent (0)"

    def track_cpu_flag(self, flag: str) -> float:
        return float(flag in _cpu_flags())

    track_cpu_flag.params = FLAGS  # type: ignore[attr-defined]
    track_cpu_flag.param_names = ["flag"]  # type: ignore[attr-defined]

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
