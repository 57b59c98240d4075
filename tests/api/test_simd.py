"""cb3.simd_backend() names the SIMD code path that the BLAKE3 and ChaCha
cores take on this CPU. The wheels step (scripts/harness/wheels.py) runs the known-answer and
cross-check tests under `qemu-x86_64 -cpu` models without AVX-512 (SSE2,
SSE4.1, AVX2) and on aarch64 (NEON), with CB3_EXPECT_SIMD naming the path
that the emulated CPU must select (qemu-user shows the host's /proc/cpuinfo,
so the CPU cannot be read from there)."""

import os
import platform

import cb3

BACKENDS = {"avx512", "avx2", "sse4.1", "sse2", "neon", "portable"}


def cpuinfo_flags() -> set[str]:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def expected_backend() -> str:
    forced = os.environ.get("CB3_EXPECT_SIMD")
    if forced:
        return forced
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return "neon"
    if machine in ("x86_64", "amd64"):
        # The kernel lists only what it enabled (AVX needs the OS's XSAVE
        # support), as cb3's run-time detection checks.
        flags = cpuinfo_flags()
        if {"avx512f", "avx512vl"} <= flags:
            return "avx512"
        if "avx2" in flags:
            return "avx2"
        if "sse4_1" in flags:
            return "sse4.1"
        return "sse2"
    return "portable"


def test_simd_backend_is_the_cpus_widest() -> None:
    backend = cb3.simd_backend()
    assert backend in BACKENDS
    assert backend == expected_backend()

