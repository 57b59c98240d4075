"""The machine a measurement runs on, as the engine sees it: the CPU's maker
and model (`_cb3.cpu_maker()`, `_cb3.cpu_model()`), the SIMD backend cb3
picked, and the family the generated pages keep one section per.

The engine is the one place that detects the CPU; the tools only name what
it reports.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from typing import Callable, Optional

import cb3
from cb3 import _cb3


def _engine(name: str, missing: str) -> Callable[[], str]:
    # Shim until cext exports the engine's CPU facts: an extension without
    # them answers as the engine does for a CPU it cannot read.
    function = getattr(_cb3, name, None)
    return function if function is not None else (lambda: missing)


def cpu_maker() -> str:
    """"Intel", "AMD" or "other" (the engine's cpuid vendor)."""
    return _engine("cpu_maker", "other")()


def cpu_model() -> str:
    """The cpuid brand string on x86-64, "implementer 0xII part 0xPPP" on
    aarch64, "unknown" where the engine cannot read either."""
    return _engine("cpu_model", "unknown")()


#: aarch64's implementer codes (the engine's model names the implementer
#: and the part, no brand).
_IMPLEMENTERS = {"0x41": "Arm", "0x48": "HiSilicon", "0x51": "Qualcomm", "0x61": "Apple", "0xc0": "Ampere"}
#: Arm's own part numbers (Linux's arch/arm64/include/asm/cputype.h).
_ARM_PARTS = {
    "0xd03": "Cortex-A53", "0xd08": "Cortex-A72", "0xd0b": "Cortex-A76", "0xd0c": "Neoverse-N1",
    "0xd40": "Neoverse-V1", "0xd49": "Neoverse-N2", "0xd4f": "Neoverse-V2", "0xd84": "Neoverse-V3",
}
_ARM_MODEL = re.compile(r"^implementer (0x[0-9a-f]+) part (0x[0-9a-f]+)$", re.I)
#: Words of a model name that name no family ("Genuine Intel(R) CPU 0000 @ 2.20GHz",
#: "Arm part 0xd8e").
_GENERIC_WORDS = {"cpu", "processor", "genuine", "part"}
#: The SIMD backends whose width splits a family: different kernels run there.
_TIERS = {"avx512": "AVX-512", "avx2": "AVX2"}


@dataclass(frozen=True)
class CpuFamily:
    """The CPU a measurement runs on: `model` as the engine names it (an
    aarch64 model with its implementer and part spelled out), and the
    family the generated tables are kept per (`name` for headings, `slug`
    for the section markers)."""

    model: str  # "AMD EPYC 9B14 96-Core Processor"
    name: str  # "AMD EPYC, AVX2"
    slug: str  # "amd-epyc-avx2"


def cpu_family(
    maker: Optional[str] = None, model: Optional[str] = None, simd: Optional[str] = None, machine: Optional[str] = None
) -> CpuFamily:
    """The CPU family of this machine (or of the engine's answers `maker`,
    `model`, `simd` and platform.machine()'s `machine`): the one place that
    decides which generated section of a results page a run belongs to.

    The family is the maker and the first brand word of the model, and the
    widest vectors cb3's kernels use there (`simd` "avx512": AVX-512,
    "avx2": AVX2, else nothing): two EPYCs, one with AVX-512 and one
    without, run different code and keep separate tables.
    The maker is the engine's ("Intel", "AMD"); for "other", an aarch64
    model's implementer (0x41: Arm), else the model's first word that is a
    known maker (a Cortex or Neoverse model: Arm). The brand word is the
    first word after the maker's that starts with a letter and is not
    "CPU", "Processor", "Genuine" or "part", with "(R)"/"(TM)" dropped and
    cut at its first "-" ("EPYC-Rome": EPYC). An aarch64 model becomes the
    implementer and the part ("Arm Neoverse-N1"; a part not in the table:
    "Arm part 0xd8e", family Arm). The slug is the name in lower case with
    every run of characters other than letters and digits made one "-":

    - Intel, "Intel(R) Xeon(R) Processor", avx512: Intel Xeon, AVX-512, intel-xeon-avx-512
    - AMD, "AMD EPYC", avx2: AMD EPYC, AVX2, amd-epyc-avx2
    - other, "implementer 0x41 part 0xd0c", neon: Arm Neoverse, arm-neoverse
    - other, "unknown": Unknown CPU (MACHINE), unknown-cpu-MACHINE
    """
    maker = cpu_maker() if maker is None else maker
    model = cpu_model() if model is None else model
    simd = cb3.simd_backend() if simd is None else simd
    machine = platform.machine() if machine is None else machine
    vendor = maker if maker in ("Intel", "AMD") else None
    if model == "unknown":
        model = ""
    arm = _ARM_MODEL.match(model)
    if arm:
        implementer, part = arm.group(1).lower(), arm.group(2).lower()
        vendor = _IMPLEMENTERS.get(implementer, f"implementer {implementer}")
        named = _ARM_PARTS.get(part) if vendor == "Arm" else None  # other implementers number parts their own way
        model = f"{vendor} {named or f'part {part}'}"
    words = re.sub(r"\((?:r|tm)\)", " ", model, flags=re.I).split()
    lowered = [word.lower() for word in words]
    if vendor is None:
        known = {v.lower(): v for v in ("Intel", "AMD", "Hygon", *_IMPLEMENTERS.values())}
        vendor = next((known[word] for word in lowered if word in known), None)
    after = words[lowered.index(vendor.lower()) + 1 :] if vendor and vendor.lower() in lowered else words
    brand = next(
        (word.split("-")[0] for word in after if word[0].isalpha() and word.lower() not in _GENERIC_WORDS), None
    )
    if vendor is None and brand in {part.split("-")[0] for part in _ARM_PARTS.values()}:
        vendor = "Arm"  # a model name of Arm's own ("Neoverse-N1") without the implementer
    name = " ".join(part for part in (vendor, brand) if part) or f"Unknown CPU ({machine or 'unknown'})"
    tier = _TIERS.get(simd)
    if tier:
        name = f"{name}, {tier}"
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return CpuFamily(model or machine or "unknown", name, slug)


def cpu_name() -> str:
    """The CPU model as the pages stamp it, e.g. "AMD EPYC 9B14 96-Core Processor"."""
    return cpu_family().model


def usable_cores() -> int:
    """The cores this process may use, as cb3's engine counts them for
    every object (CPU affinity and cgroup quota: cb3_threads_count)."""
    import cb3

    return int(cb3._cb3.thread_count(cb3.AUTO))


def load_average() -> str:
    """The 1/5/15-minute load averages, "1.00 / 0.50 / 0.25", or "unknown"."""
    try:
        return " / ".join(f"{load:.2f}" for load in os.getloadavg())
    except OSError:
        return "unknown"
