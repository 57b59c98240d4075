"""The per-call cases of ``python -m cb3 bench``: cb3 and the peers a user
would pick instead, timed in interleaved rounds in one process (medians),
and the report of their ratios."""

import hashlib
import os
import platform
import random
import re
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Hashable, Optional, TypeVar

import cb3
from cb3 import _cb3
from cb3.chacha20 import ChaCha20

DEFAULT_SIZES = [64, 256, 1024, 4096, 65536, 1 << 20, 16 << 20, 64 << 20]
QUICK_SIZES = [64, 1024, 65536, 1 << 20]

# A case builds, for one message size, a function that runs `n` calls and
# returns the seconds they took.
Timer = Callable[[int], float]


@dataclass
class Case:
    name: str
    make: Callable[[int], Timer]
    group: str = "aead"  # ratios compare a case with its group's cb3 reference


#: The cb3 case each group's ratios are computed against.
REFERENCE = {"aead": "cb3 encrypt", "hash": "cb3 keyed_hash", "chacha": "cb3 ChaCha20 (new object)"}


#: The clock of every timer: wall time by default; `--clock process` uses the
#: process's CPU time, which leaves out the time other jobs of a shared machine
#: hold the CPU (but adds up all threads: not comparable for max_threads cases).
clock: Callable[[], float] = time.perf_counter
clock_name = "wall"


def loop(call: Callable[[], object], wall: bool = False) -> Timer:
    """A timer of `n` calls of `call`, on `clock` (on wall time if `wall`)."""

    def run(n: int) -> float:
        now = time.perf_counter if wall else clock
        start = now()
        for _ in range(n):
            call()
        return now() - start

    return run


def rust(mode: int) -> Callable[[int], Timer]:
    """Timers, per message size, of `_cb3.bench_reference` mode `mode` (a
    `cb3_bench_mode` of rustlib/src/ffi/bench.rs: Rust, no Python)."""
    return lambda size: lambda n: _cb3.bench_reference(mode, size, n)


def _cases() -> list[Case]:
    key, nonce = os.urandom(32), os.urandom(24)
    cipher = cb3.ChaCha20Blake3(key)

    def cb3_encrypt(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: cipher.encrypt(nonce, data))

    def cb3_decrypt(size: int) -> Timer:
        sealed = cipher.encrypt(nonce, os.urandom(size))
        return loop(lambda: cipher.decrypt(nonce, sealed))

    def cb3_encrypt_into(size: int) -> Timer:
        data, out = os.urandom(size), bytearray(size + 32)
        return loop(lambda: cipher.encrypt_into(nonce, data, None, out))

    def cb3_in_place(size: int) -> Timer:
        buf = bytearray(size)
        return loop(lambda: cipher.encrypt_in_place(nonce, buf))

    threaded = cb3.ChaCha20Blake3(key, max_threads=cb3.AUTO)

    def cb3_threaded(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: threaded.encrypt(nonce, data))

    def cb3_stream(size: int) -> Timer:
        stream, data = cb3.Stream(key, nonce), os.urandom(size)
        return loop(lambda: stream.encrypt(data))

    cases = [
        Case("cb3 encrypt", cb3_encrypt),
        Case("cb3 decrypt", cb3_decrypt),
        Case("cb3 encrypt_into", cb3_encrypt_into),
        Case("cb3 encrypt_in_place", cb3_in_place),
        Case("cb3 Stream.encrypt", cb3_stream),
        Case("cb3 encrypt max_threads=AUTO", cb3_threaded),
        Case("raw crate encrypt", rust(0)),
        Case("raw crate encrypt_in_place", rust(1)),
        Case("cb3 Rust core encrypt", rust(3)),
    ]
    def keyed_hash(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: cb3.keyed_hash(key, data))

    def hasher(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: cb3.blake3(data, key=key).digest())

    def chacha_new(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: ChaCha20(key, nonce[:12]).update(data))

    cases += [
        Case("cb3 keyed_hash", keyed_hash, "hash"),
        Case("cb3.blake3(key=).digest()", hasher, "hash"),
        Case("cb3 ChaCha20 (new object)", chacha_new, "chacha"),
    ]
    cases += _peer_cases()
    return cases


#: The peers `bench` compares with: (import name, what it provides, PyPI
#: distribution). Those that fail to import are listed after the report.
PEERS = (
    ("cryptography", "ChaCha20Poly1305, AESGCM, ChaCha20", "cryptography"),
    ("nacl", "XChaCha20-Poly1305", "PyNaCl"),
    ("Crypto", "XChaCha20-Poly1305, ChaCha20", "pycryptodome"),
    ("blake3", "BLAKE3", "blake3"),
)


def missing_peers() -> list[tuple[str, str, str]]:
    """The peers of :data:`PEERS` that cannot be imported."""
    import importlib

    missing = []
    for peer in PEERS:
        try:
            importlib.import_module(peer[0])
        except ImportError:
            missing.append(peer)
    return missing


def _peer_cases() -> list[Case]:
    cases: list[Case] = []
    key, nonce12, nonce24 = os.urandom(32), os.urandom(12), os.urandom(24)
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
    except ImportError:
        pass
    else:
        for label, aead in (("ChaCha20Poly1305", ChaCha20Poly1305(key)), ("AESGCM-256", AESGCM(key))):

            def allocating(size: int, aead: object = aead) -> Timer:
                data = os.urandom(size)
                return loop(lambda: aead.encrypt(nonce12, data, None))  # type: ignore[attr-defined]

            def into(size: int, aead: object = aead) -> Timer:
                data, out = os.urandom(size), bytearray(size + 16)
                return loop(lambda: aead.encrypt_into(nonce12, data, None, out))  # type: ignore[attr-defined]

            cases.append(Case(f"cryptography {label}", allocating))
            if hasattr(aead, "encrypt_into"):
                cases.append(Case(f"cryptography {label} encrypt_into", into))
    try:
        from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_encrypt as nacl_encrypt
    except ImportError:
        pass
    else:

        def nacl(size: int) -> Timer:
            data = os.urandom(size)
            return loop(lambda: nacl_encrypt(data, None, nonce24, key))

        cases.append(Case("PyNaCl XChaCha20-Poly1305", nacl))
    try:
        from Crypto.Cipher import ChaCha20_Poly1305
    except ImportError:
        pass
    else:

        def pycryptodome(size: int) -> Timer:
            data = os.urandom(size)
            return loop(lambda: ChaCha20_Poly1305.new(key=key, nonce=nonce24).encrypt_and_digest(data))

        cases.append(Case("pycryptodome XChaCha20-Poly1305", pycryptodome))
    try:
        import blake3 as blake3_py
    except ImportError:
        pass
    else:

        def b3(size: int) -> Timer:
            data = os.urandom(size)
            return loop(lambda: blake3_py.blake3(data, key=key).digest())

        cases.append(Case("blake3-py keyed hash", b3, "hash"))

    def blake2b(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: hashlib.blake2b(data, key=key).digest())

    cases.append(Case("hashlib blake2b keyed", blake2b, "hash"))
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
    except ImportError:
        pass
    else:

        def pyca_chacha(size: int) -> Timer:
            data, nonce16 = os.urandom(size), bytes(4) + nonce12
            return loop(lambda: Cipher(algorithms.ChaCha20(key, nonce16), None).encryptor().update(data))

        cases.append(Case("cryptography ChaCha20 (new object)", pyca_chacha, "chacha"))
    try:
        from Crypto.Cipher import ChaCha20 as CryptoChaCha20
    except ImportError:
        pass
    else:

        def pycryptodome_chacha(size: int) -> Timer:
            data = os.urandom(size)
            return loop(lambda: CryptoChaCha20.new(key=key, nonce=nonce12).encrypt(data))

        cases.append(Case("pycryptodome ChaCha20 (new object)", pycryptodome_chacha, "chacha"))
    return cases


def calibrate(timer: Timer, budget: float) -> int:
    """A call count whose loop takes about `budget` seconds."""
    n = 1
    while True:
        elapsed = timer(n)
        if elapsed >= budget / 10 or n >= 1 << 24:
            return max(1, int(n * budget / max(elapsed, 1e-9)))
        n *= 10


Key = TypeVar("Key", bound=Hashable)


def interleaved(timers: dict[Key, Timer], counts: dict[Key, int], rounds: int, warm: bool = False) -> dict[Key, list[float]]:
    """Seconds per call of each timer (`counts[key]` calls per batch), one
    batch of every timer per round. Each round runs the batches in a new
    random order (seeded: the same orders in every run), so that no case
    always follows the same one: a 16 MiB case right after the case that
    wrote its output buffer measured 5-9 % faster there than right after
    another (docs/design/performance.md). With `warm`, an untimed call
    starts each batch."""
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


@dataclass
class Result:
    case: str
    size: int
    seconds: float  # median seconds per call
    samples: list[float]

    @property
    def mb_per_s(self) -> float:
        return self.size / self.seconds / 1e6


#: case name -> group, filled by measure()
groups: dict[str, str] = {}


def _warm_up(timer: Timer, seconds: float) -> None:
    """Runs `timer` for about `seconds` of wall time (PyPy's JIT, and its GC
    heap growing to a steady size: docs/pypy.md)."""
    n, end = 1, time.perf_counter() + seconds
    while time.perf_counter() < end:
        timer(n)
        n = min(n * 2, 1 << 16)


def measure(
    sizes: list[int], rounds: int, budget: float, only: Optional[list[str]] = None, warmup: float = 0.0
) -> list[Result]:
    cases = [case for case in _cases() if not only or any(word in case.name for word in only)]
    groups.update({case.name: case.group for case in cases})
    timers = {(case.name, size): case.make(size) for case in cases for size in sizes}
    for timer in timers.values():
        _warm_up(timer, warmup)
    counts = {key: calibrate(timer, budget) for key, timer in timers.items()}
    samples = interleaved(timers, counts, rounds)
    return [Result(name, size, statistics.median(values), values) for (name, size), values in samples.items()]


def human_size(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def cpuinfo_fields(text: Optional[str] = None) -> dict[str, str]:
    """The fields of the first processor of /proc/cpuinfo (or of `text`, its
    contents), name -> value; {} where there is no /proc/cpuinfo."""
    if text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
                text = cpuinfo.read()
        except OSError:
            return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # a blank line ends the first processor's block
            continue
        name, colon, value = line.partition(":")
        if colon:
            fields.setdefault(name.strip(), value.strip())
    return fields


#: /proc/cpuinfo's x86 `vendor_id`, and arm64's `CPU implementer` (arm64 has no
#: model name: the model is the implementer and its `CPU part`).
_VENDOR_IDS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon"}
_IMPLEMENTERS = {"0x41": "Arm", "0x48": "HiSilicon", "0x51": "Qualcomm", "0x61": "Apple", "0xc0": "Ampere"}
#: Arm's own parts (Linux's arch/arm64/include/asm/cputype.h).
_ARM_PARTS = {
    "0xd03": "Cortex-A53", "0xd08": "Cortex-A72", "0xd0b": "Cortex-A76", "0xd0c": "Neoverse-N1",
    "0xd40": "Neoverse-V1", "0xd49": "Neoverse-N2", "0xd4f": "Neoverse-V2", "0xd84": "Neoverse-V3",
}
#: Words of a model name that name no family ("Genuine Intel(R) CPU 0000 @ 2.20GHz",
#: "Arm part 0xd8e").
_GENERIC_WORDS = {"cpu", "processor", "genuine", "part"}


@dataclass(frozen=True)
class CpuFamily:
    """The CPU the bench runs on: `model` as the machine names it, and the
    family the generated tables are kept per (`name` for headings, `slug`
    for the section markers)."""

    model: str  # "AMD EPYC 9B14 96-Core Processor"
    name: str  # "AMD EPYC, AVX2"
    slug: str  # "amd-epyc-avx2"


def cpu_family(cpuinfo: Optional[str] = None, machine: Optional[str] = None) -> CpuFamily:
    """The CPU family of this machine (or of `cpuinfo`, the text of a
    /proc/cpuinfo, and `machine`, platform.machine()'s answer): the one place
    that decides which generated section of docs/results/performance.md a
    run belongs to.

    The family is the vendor and the first brand word of the model name,
    and on x86 the widest vectors cb3's kernels use there (`vector_tier`):
    two EPYCs, one with AVX-512 and one without, run different code and
    keep separate tables.
    The vendor comes from x86's `vendor_id` (GenuineIntel: Intel,
    AuthenticAMD: AMD) or arm64's `CPU implementer` (0x41: Arm), else from the
    model name (its first word that is a known vendor; a Cortex or Neoverse
    model: Arm). The brand word is the first word after the vendor's that
    starts with a letter and is not "CPU", "Processor", "Genuine" or "part",
    with "(R)"/"(TM)" dropped and cut at its first "-" ("EPYC-Rome": EPYC).
    arm64 has no model name: the model is the implementer and the part
    ("Arm Neoverse-N1"; a part not in the table: "Arm part 0xd8e", family
    Arm). The slug is the name in lower case with every run of characters
    other than letters and digits made one "-":

    - "Intel(R) Xeon(R) Processor" with avx512f and avx512vl among its
      flags: Intel Xeon, AVX-512, intel-xeon-avx-512
    - "AMD EPYC" with avx2 (no avx512f): AMD EPYC, AVX2, amd-epyc-avx2
    - "AMD EPYC 9B14 96-Core Processor" without a flags line: AMD EPYC, amd-epyc
    - arm64, implementer 0x41, part 0xd0c: Arm Neoverse, arm-neoverse
    - no model at all: Unknown CPU (MACHINE), unknown-cpu-MACHINE
    """
    fields = cpuinfo_fields(cpuinfo)
    machine = platform.machine() if machine is None else machine
    vendor = _VENDOR_IDS.get(fields.get("vendor_id", "")) or _IMPLEMENTERS.get(fields.get("CPU implementer", "").lower())
    model = fields.get("model name", "")
    if not model and vendor is not None and "CPU part" in fields:
        part = fields["CPU part"].lower()
        named = _ARM_PARTS.get(part) if vendor == "Arm" else None  # other implementers number parts their own way
        model = f"{vendor} {named or f'part {part}'}"
    words = re.sub(r"\((?:r|tm)\)", " ", model, flags=re.I).split()
    lowered = [word.lower() for word in words]
    if vendor is None:
        known = {v.lower(): v for v in (*_VENDOR_IDS.values(), *_IMPLEMENTERS.values())}
        vendor = next((known[word] for word in lowered if word in known), None)
    after = words[lowered.index(vendor.lower()) + 1 :] if vendor and vendor.lower() in lowered else words
    brand = next(
        (word.split("-")[0] for word in after if word[0].isalpha() and word.lower() not in _GENERIC_WORDS), None
    )
    if vendor is None and brand in {part.split("-")[0] for part in _ARM_PARTS.values()}:
        vendor = "Arm"  # a model name of Arm's own ("Neoverse-N1") without the implementer
    name = " ".join(part for part in (vendor, brand) if part) or f"Unknown CPU ({machine or 'unknown'})"
    tier = vector_tier(fields.get("flags", "").split())
    if tier:
        name = f"{name}, {tier}"
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return CpuFamily(model or machine or "unknown", name, slug)


def vector_tier(flags: list[str]) -> Optional[str]:
    """The widest x86 vectors that cb3's SIMD code picks on a CPU with these
    /proc/cpuinfo `flags` (as `cb3.simd_backend()` does at run time):
    "AVX-512" (avx512f and avx512vl), "AVX2", or None (SSE only, or not x86)."""
    if {"avx512f", "avx512vl"} <= set(flags):
        return "AVX-512"
    return "AVX2" if "avx2" in flags else None


def cpu_name() -> str:
    """The CPU model, e.g. "AMD EPYC 9B14 96-Core Processor"."""
    return cpu_family().model


def load_average() -> str:
    try:
        return " / ".join(f"{load:.2f}" for load in os.getloadavg())
    except OSError:
        return "unknown"


def report(results: list[Result]) -> str:
    by_key = {(r.case, r.size): r for r in results}
    sizes = sorted({r.size for r in results})
    order = list(REFERENCE)
    names = sorted(dict.fromkeys(r.case for r in results), key=lambda name: order.index(groups.get(name, "aead")))
    lines = [
        f"cb3 {cb3.__version__}, {platform.python_implementation()} {platform.python_version()}, "
        f"HPy ABI {cb3.HPY_ABI}, SIMD {cb3.simd_backend()}, CPU {cpu_name()} ({os.cpu_count()} cores), "
        f"caches {_cb3.cache_tuning()}, load average {load_average()} (1/5/15 min) after the run",
        "medians of interleaved rounds; ns per call and MB/s (10^6 B/s); ratio = time of the group's cb3 case "
        f"({', '.join(REFERENCE.values())}) / time of this case: above 1, cb3 is slower",
        "",
    ]
    for size in sizes:
        lines.append(f"{human_size(size)}:")
        for name in names:
            result = by_key.get((name, size))
            if result is None:
                continue
            ours = by_key.get((REFERENCE[groups.get(name, "aead")], size))
            ratio = f"{ours.seconds / result.seconds:6.2f}" if ours else "     -"
            lines.append(f"  {name:44} {result.seconds * 1e9:14.0f} ns {result.mb_per_s:10.0f} MB/s  ratio {ratio}")
    return "\n".join(lines)
