"""`python -m cb3 bench`: cb3 against what a user would pick instead, measured
side by side in one process.

Every case is timed in interleaved rounds (round 1 of every case and size,
then round 2, ...) and the median per-call time is kept, so a burst of noise
on a shared machine hits all cases alike. Peers that are not installed are
listed at the end, with the pip command that installs them. The raw-Rust
column times the `chacha20-blake3` crate itself through
`cb3._cb3.bench_reference`, in the same process.

    python -m cb3 bench [--quick] [--sizes 64,1024,...] [--rounds N] [--json FILE]
    python -m cb3 bench --targets-markdown docs/results/performance.md [--quick] [--rounds N]
    python -m cb3 bench --files-markdown docs/results/files.md [--file-size 256M] [--rounds N]

`--targets-markdown FILE` measures the per-call targets instead (each a
ratio of two cases timed in the same rounds) and rewrites the generated
section of FILE, between `<!-- BEGIN generated: targets -->` and
`<!-- END generated: targets -->`, with a table stamped with the date and
the machine. `--files-markdown FILE` does the same for the file rows
(section `files`, e.g. in docs/results/files.md).
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

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


def _loop(call: Callable[[], object], wall: bool = False) -> Timer:
    """A timer of `n` calls of `call`, on `clock` (on wall time if `wall`)."""

    def run(n: int) -> float:
        now = time.perf_counter if wall else clock
        start = now()
        for _ in range(n):
            call()
        return now() - start

    return run


def _cases() -> list[Case]:
    key, nonce = os.urandom(32), os.urandom(24)
    cipher = cb3.ChaCha20Blake3(key)

    def cb3_encrypt(size: int) -> Timer:
        data = os.urandom(size)
        return _loop(lambda: cipher.encrypt(nonce, data))

    def cb3_decrypt(size: int) -> Timer:
        sealed = cipher.encrypt(nonce, os.urandom(size))
        return _loop(lambda: cipher.decrypt(nonce, sealed))

    def cb3_encrypt_into(size: int) -> Timer:
        data, out = os.urandom(size), bytearray(size + 32)
        return _loop(lambda: cipher.encrypt_into(nonce, data, None, out))

    def cb3_in_place(size: int) -> Timer:
        buf = bytearray(size)
        return _loop(lambda: cipher.encrypt_in_place(nonce, buf))

    threaded = cb3.ChaCha20Blake3(key, max_threads=cb3.AUTO)

    def cb3_threaded(size: int) -> Timer:
        data = os.urandom(size)
        return _loop(lambda: threaded.encrypt(nonce, data))

    def cb3_stream(size: int) -> Timer:
        stream, data = cb3.Stream(key, nonce), os.urandom(size)
        return _loop(lambda: stream.encrypt(data))

    def crate(mode: int) -> Callable[[int], Timer]:
        return lambda size: lambda n: _cb3.bench_reference(mode, size, n)

    cases = [
        Case("cb3 encrypt", cb3_encrypt),
        Case("cb3 decrypt", cb3_decrypt),
        Case("cb3 encrypt_into", cb3_encrypt_into),
        Case("cb3 encrypt_in_place", cb3_in_place),
        Case("cb3 Stream.encrypt", cb3_stream),
        Case("cb3 encrypt max_threads=AUTO", cb3_threaded),
        Case("raw crate encrypt", crate(0)),
        Case("raw crate encrypt_in_place", crate(1)),
    ]
    def keyed_hash(size: int) -> Timer:
        data = os.urandom(size)
        return _loop(lambda: cb3.keyed_hash(key, data))

    def hasher(size: int) -> Timer:
        data = os.urandom(size)
        return _loop(lambda: cb3.blake3(data, key=key).digest())

    def chacha_new(size: int) -> Timer:
        data = os.urandom(size)
        return _loop(lambda: ChaCha20(key, nonce[:12]).update(data))

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
                return _loop(lambda: aead.encrypt(nonce12, data, None))  # type: ignore[attr-defined]

            def into(size: int, aead: object = aead) -> Timer:
                data, out = os.urandom(size), bytearray(size + 16)
                return _loop(lambda: aead.encrypt_into(nonce12, data, None, out))  # type: ignore[attr-defined]

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
            return _loop(lambda: nacl_encrypt(data, None, nonce24, key))

        cases.append(Case("PyNaCl XChaCha20-Poly1305", nacl))
    try:
        from Crypto.Cipher import ChaCha20_Poly1305
    except ImportError:
        pass
    else:

        def pycryptodome(size: int) -> Timer:
            data = os.urandom(size)
            return _loop(lambda: ChaCha20_Poly1305.new(key=key, nonce=nonce24).encrypt_and_digest(data))

        cases.append(Case("pycryptodome XChaCha20-Poly1305", pycryptodome))
    try:
        import blake3 as blake3_py
    except ImportError:
        pass
    else:

        def b3(size: int) -> Timer:
            data = os.urandom(size)
            return _loop(lambda: blake3_py.blake3(data, key=key).digest())

        cases.append(Case("blake3-py keyed hash", b3, "hash"))

    def blake2b(size: int) -> Timer:
        data = os.urandom(size)
        return _loop(lambda: hashlib.blake2b(data, key=key).digest())

    cases.append(Case("hashlib blake2b keyed", blake2b, "hash"))
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
    except ImportError:
        pass
    else:

        def pyca_chacha(size: int) -> Timer:
            data, nonce16 = os.urandom(size), bytes(4) + nonce12
            return _loop(lambda: Cipher(algorithms.ChaCha20(key, nonce16), None).encryptor().update(data))

        cases.append(Case("cryptography ChaCha20 (new object)", pyca_chacha, "chacha"))
    try:
        from Crypto.Cipher import ChaCha20 as CryptoChaCha20
    except ImportError:
        pass
    else:

        def pycryptodome_chacha(size: int) -> Timer:
            data = os.urandom(size)
            return _loop(lambda: CryptoChaCha20.new(key=key, nonce=nonce12).encrypt(data))

        cases.append(Case("pycryptodome ChaCha20 (new object)", pycryptodome_chacha, "chacha"))
    return cases


def _calibrate(timer: Timer, budget: float) -> int:
    """A call count whose loop takes about `budget` seconds."""
    n = 1
    while True:
        elapsed = timer(n)
        if elapsed >= budget / 10 or n >= 1 << 24:
            return max(1, int(n * budget / max(elapsed, 1e-9)))
        n *= 10


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
    counts = {key: _calibrate(timer, budget) for key, timer in timers.items()}
    samples: dict[tuple[str, int], list[float]] = {key: [] for key in timers}
    for _ in range(rounds):
        for key, timer in timers.items():
            samples[key].append(timer(counts[key]) / counts[key])
    return [Result(name, size, statistics.median(values), values) for (name, size), values in samples.items()]


def human_size(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def report(results: list[Result]) -> str:
    by_key = {(r.case, r.size): r for r in results}
    sizes = sorted({r.size for r in results})
    order = list(REFERENCE)
    names = sorted(dict.fromkeys(r.case for r in results), key=lambda name: order.index(groups.get(name, "aead")))
    lines = [
        f"cb3 {cb3.__version__}, {platform.python_implementation()} {platform.python_version()}, "
        f"HPy ABI {cb3.HPY_ABI}, SIMD {cb3.simd_backend()}, CPU {cpu_name()} ({os.cpu_count()} cores), "
        f"caches {_cb3.cache_tuning()}, load average {_load_average()} (1/5/15 min) after the run",
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


def markers(name: str) -> tuple[str, str]:
    """The BEGIN and END lines of a generated section of a doc."""
    return f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"


#: The markers of the generated section that `--targets-markdown` rewrites.
BEGIN_TARGETS, END_TARGETS = markers("targets")
#: ... and those of the section that `--files-markdown` rewrites.
BEGIN_FILES, END_FILES = markers("files")


@dataclass
class Target:
    """One target of issue #15: `ours` / `peer` (times; for a speed-up,
    `peer` / `ours`) must be at most (at least, for a speed-up) `limit`.
    Rows without a limit are evidence for the floor of a target."""

    what: str
    size: int
    ours: str
    peer: str
    limit: Optional[float]
    speedup: bool = False

    def ratio(self, seconds: dict[str, float]) -> Optional[float]:
        if self.ours not in seconds or self.peer not in seconds:
            return None
        a, b = seconds[self.ours], seconds[self.peer]
        return b / a if self.speedup else a / b

    def met(self, ratio: float) -> bool:
        assert self.limit is not None
        return ratio >= self.limit if self.speedup else ratio <= self.limit


BIG = 16 << 20

TARGETS = [
    Target("`encrypt` / cryptography ChaCha20Poly1305 `encrypt`", 64, "encrypt", "ChaCha20Poly1305 encrypt", 0.55),
    Target("`encrypt` / cryptography AESGCM `encrypt`", 64, "encrypt", "AESGCM encrypt", 0.85),
    Target("`encrypt` / cryptography ChaCha20Poly1305 `encrypt`", 256, "encrypt", "ChaCha20Poly1305 encrypt", 0.85),
    Target("`encrypt` / cryptography ChaCha20Poly1305 `encrypt`", 4096, "encrypt", "ChaCha20Poly1305 encrypt", 1.5),
    Target("`decrypt` / cryptography ChaCha20Poly1305 `decrypt`", 64, "decrypt", "ChaCha20Poly1305 decrypt", 0.55),
    # The same fixed cost in the other forms (issue #15: "same fixed-cost
    # gains" for the detached and _into forms and Stream).
    Target("`encrypt_detached` / cryptography ChaCha20Poly1305 `encrypt`", 64, "encrypt_detached", "ChaCha20Poly1305 encrypt", 0.55),
    Target("`encrypt_into` / cryptography ChaCha20Poly1305 `encrypt`", 64, "encrypt_into", "ChaCha20Poly1305 encrypt", 0.55),
    Target("`decrypt_into` / cryptography ChaCha20Poly1305 `decrypt`", 64, "decrypt_into", "ChaCha20Poly1305 decrypt", 0.55),
    Target("`Stream.encrypt` / cryptography ChaCha20Poly1305 `encrypt`", 64, "Stream.encrypt", "ChaCha20Poly1305 encrypt", 0.55),
    Target("`keyed_hash` / blake3-py keyed hash", 64, "keyed_hash", "blake3-py keyed", 0.5),
    Target("`encrypt_into` / (OpenSSL ChaCha20 + blake3-py keyed), one thread", BIG, "encrypt_into", "ChaCha20 + blake3-py", 1.02),
    Target("`decrypt_into` / (OpenSSL ChaCha20 + blake3-py keyed), one thread", BIG, "decrypt_into", "ChaCha20 + blake3-py", 1.02),
    Target("`encrypt_into`: speed-up of `max_threads=2` over 1 (wall time)", BIG, "encrypt_into max_threads=2, wall", "encrypt_into, wall", 1.7, True),
    # Evidence for the 16 MiB floors: the fused pass against its own two
    # primitives run back to back, and cb3's ChaCha20 against OpenSSL's.
    Target("evidence: `encrypt_into` / (cb3's ChaCha20 + cb3 `keyed_hash`), one thread", BIG, "encrypt_into", "cb3 ChaCha20 + keyed_hash", None),
    Target("evidence: cb3 `ChaCha20.update_into` / OpenSSL ChaCha20 `update_into`", BIG, "cb3 ChaCha20", "OpenSSL ChaCha20", None),
]


def _target_timers(size: int) -> dict[str, Timer]:
    """The cases the targets compare, at one size (peers only if installed)."""
    key, nonce, nonce12 = os.urandom(32), os.urandom(24), os.urandom(12)
    data = os.urandom(size)
    cipher, two = cb3.ChaCha20Blake3(key), cb3.ChaCha20Blake3(key, max_threads=2)
    sealed = cipher.encrypt(nonce, data)
    out, plain = bytearray(size + 32), bytearray(size)
    stream = cb3.Stream(key, nonce)
    timers: dict[str, Timer] = {
        "encrypt": _loop(lambda: cipher.encrypt(nonce, data)),
        "encrypt_detached": _loop(lambda: cipher.encrypt_detached(nonce, data)),
        "Stream.encrypt": _loop(lambda: stream.encrypt(data)),
        "decrypt": _loop(lambda: cipher.decrypt(nonce, sealed)),
        "keyed_hash": _loop(lambda: cb3.keyed_hash(key, data)),
        "encrypt_into": _loop(lambda: cipher.encrypt_into(nonce, data, None, out)),
        "decrypt_into": _loop(lambda: cipher.decrypt_into(nonce, sealed, None, plain)),
    }
    if size >= 1 << 20:
        chacha, own_out = ChaCha20(key, nonce[:8]), bytearray(size)

        def own_back_to_back() -> None:
            chacha.update_into(data, own_out)
            cb3.keyed_hash(key, own_out)

        timers["cb3 ChaCha20 + keyed_hash"] = _loop(own_back_to_back)
        timers["cb3 ChaCha20"] = _loop(lambda: chacha.update_into(data, own_out))
        # Threads: wall time whatever the clock (CPU time adds up the threads).
        timers["encrypt_into, wall"] = _loop(lambda: cipher.encrypt_into(nonce, data, None, out), wall=True)
        timers["encrypt_into max_threads=2, wall"] = _loop(lambda: two.encrypt_into(nonce, data, None, out), wall=True)
    try:
        import blake3 as blake3_py
    except ImportError:
        blake3_py = None
    else:
        timers["blake3-py keyed"] = _loop(lambda: blake3_py.blake3(data, key=key).digest())
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
    except ImportError:
        return timers
    chapoly, gcm = ChaCha20Poly1305(key), AESGCM(key)
    chapoly_sealed = chapoly.encrypt(nonce12, data, None)
    timers["ChaCha20Poly1305 encrypt"] = _loop(lambda: chapoly.encrypt(nonce12, data, None))
    timers["ChaCha20Poly1305 decrypt"] = _loop(lambda: chapoly.decrypt(nonce12, chapoly_sealed, None))
    timers["AESGCM encrypt"] = _loop(lambda: gcm.encrypt(nonce12, data, None))
    stream_out = bytearray(size)
    openssl = Cipher(algorithms.ChaCha20(key, bytes(8) + nonce[:8]), None).encryptor()
    timers["OpenSSL ChaCha20"] = _loop(lambda: openssl.update_into(data, stream_out))
    if blake3_py is not None:

        def back_to_back() -> None:
            # What cb3 is made of, on the same data: the keystream XOR
            # (OpenSSL) into a buffer, then the keyed hash of that buffer.
            Cipher(algorithms.ChaCha20(key, bytes(8) + nonce[:8]), None).encryptor().update_into(data, stream_out)
            blake3_py.blake3(stream_out, key=key).digest()

        timers["ChaCha20 + blake3-py"] = _loop(back_to_back)
    return timers


def measure_targets(rounds: int, budget: float, targets: list[Target] = TARGETS) -> list[tuple[Target, Optional[float]]]:
    """Every target's ratio, from the medians of interleaved rounds of the
    cases it compares (all sizes in one loop, like `measure`)."""
    wanted = {(t.size, name) for t in targets for name in (t.ours, t.peer)}
    timers: dict[tuple[int, str], Timer] = {}
    for size in sorted({t.size for t in targets}):
        for name, timer in _target_timers(size).items():
            if (size, name) in wanted:
                timers[(size, name)] = timer
    counts = {key: _calibrate(timer, budget) for key, timer in timers.items()}
    samples: dict[tuple[int, str], list[float]] = {key: [] for key in timers}
    for _ in range(rounds):
        for key, timer in timers.items():
            samples[key].append(timer(counts[key]) / counts[key])
    results = []
    for target in targets:
        seconds = {name: statistics.median(values) for (size, name), values in samples.items() if size == target.size}
        results.append((target, target.ratio(seconds)))
    return results


def _load_average() -> str:
    try:
        return " / ".join(f"{load:.2f}" for load in os.getloadavg())
    except OSError:
        return "unknown"


def targets_markdown(results: list[tuple[Target, Optional[float]]], rounds: int, command: str, load: str) -> str:
    """The generated section: how, where and when it was measured, then one
    row per target."""
    lines = [
        BEGIN_TARGETS,
        stamp(command, load)
        + f", {clock_name} clock, medians of {rounds} interleaved rounds. "
        "Ratio = cb3's time / the peer's (below 1: cb3 faster); for the thread row, the speed-up "
        "(one thread's time / two threads').",
        "",
        "| size | ratio | measured | target | met |",
        "|---|---|---:|---:|---|",
    ]
    for target, ratio in results:
        limit = "—" if target.limit is None else f"≥ {target.limit:g}" if target.speedup else f"≤ {target.limit:g}"
        if ratio is None:
            measured, met = "—", "not measured (peer not installed)"
        elif target.limit is None:
            measured, met = f"{ratio:.2f}", "(evidence)"
        else:
            measured, met = f"{ratio:.2f}", "met" if target.met(ratio) else "**not met**"
        lines.append(f"| {human_size(target.size)} | {target.what} | {measured} | {limit} | {met} |")
    lines.append(END_TARGETS)
    return "\n".join(lines)


def stamp(command: str, load: str) -> str:
    """How, where and when a generated section was measured."""
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    return (
        f"Generated by `{command}` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: "
        f"CPU {cpu_name()}, {cores} cores ({usable} usable), load average {load} (1/5/15 min) "
        f"before the run, {platform.python_implementation()} {platform.python_version()}, cb3 {cb3.__version__} "
        f"(SIMD {cb3.simd_backend()}; caches {_cb3.cache_tuning()})"
    )


def replace_section(text: str, section: str, name: str = "targets") -> str:
    """`text` with its generated section `name` replaced by `section`."""
    begin, end_marker = markers(name)
    start, end = text.find(begin), text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"no section between {begin!r} and {end_marker!r}")
    return text[:start] + section + text[end + len(end_marker):]


def write_section(path: str, option: str, name: str, options: str, produce: Callable[[str, str], str]) -> int:
    """Rewrites the generated section `name` of the doc at `path` with what
    `produce(command, load)` returns, after checking that the section is there
    (before measuring anything)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        replace_section(text, "", name)
    except (OSError, ValueError) as error:
        print(f"{option}: {path}: {error}", file=sys.stderr)
        return 2
    load = _load_average()
    shown = os.path.basename(path) if os.path.isabs(path) else path
    section = produce(f"python -m cb3 bench {option} {shown}{options}", load)
    with open(path, "w", encoding="utf-8") as f:
        f.write(replace_section(text, section, name))
    print(section)
    return 0


def write_targets(path: str, rounds: int, budget: float, options: str) -> int:
    return write_section(
        path,
        "--targets-markdown",
        "targets",
        options,
        lambda command, load: targets_markdown(measure_targets(rounds, budget), rounds, command, load),
    )


def write_files(path: str, file_size: str, sparse_size: str, rounds: int, directory: Optional[str], options: str) -> int:
    from cb3 import bench_files

    def produce(command: str, load: str) -> str:
        rows = bench_files.rows(file_size, sparse_size, rounds, directory)
        return "\n".join([BEGIN_FILES, stamp(command, load) + ".", "", "```", rows, "```", END_FILES])

    return write_section(path, "--files-markdown", "files", options, produce)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="few sizes, short loops (a smoke run)")
    parser.add_argument("--sizes", help="comma-separated message sizes in bytes")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per case (default 5; quick: 2)")
    parser.add_argument("--only", help="comma-separated words: run only cases whose name contains one")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--targets-markdown",
        metavar="FILE",
        help="measure the per-call targets (cb3 against its peers) and rewrite FILE's generated section "
        f"({BEGIN_TARGETS} ... {END_TARGETS}), e.g. docs/results/performance.md",
    )
    parser.add_argument("--files", action="store_true", help="only the file rows (cb3/bench_files.py)")
    parser.add_argument(
        "--files-markdown",
        metavar="FILE",
        help=f"measure the file rows and rewrite FILE's generated section ({BEGIN_FILES} ... {END_FILES}) "
        "with the file rows, e.g. docs/results/files.md",
    )
    parser.add_argument("--file-size", default="256M", help="file rows: the file size (default 256M)")
    parser.add_argument("--sparse-size", default="2G", help="file rows: the sparse file for peak RSS (default 2G; 0: skip)")
    parser.add_argument("--dir", help="file rows: where the files go (default /dev/shm)")
    parser.add_argument(
        "--clock",
        choices=["wall", "process"],
        default="wall",
        help="wall time (default) or the process's CPU time (steadier on a shared machine)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="run each case this long before timing it (PyPy: JIT and GC heap in steady state; default 0)",
    )


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Registers ``python -m cb3 bench`` (see cb3/__main__.py)."""
    parser = subparsers.add_parser(
        "bench",
        help="compare cb3's speed with the AEAD and hash libraries installed",
        description=__doc__.split("\n\n")[0] + " Peers: "
        + "; ".join(f"{dist} ({what})" for _, what, dist in PEERS)
        + "; hashlib; the Rust crate chacha20-blake3.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    global clock, clock_name
    clock = time.process_time if args.clock == "process" else time.perf_counter
    clock_name = "process CPU" if args.clock == "process" else "wall"
    if args.targets_markdown:
        rounds = args.rounds or (1 if args.quick else 7)
        options = (" --quick" if args.quick else "") + (f" --rounds {args.rounds}" if args.rounds else "")
        options += " --clock process" if args.clock == "process" else ""
        return write_targets(args.targets_markdown, rounds, 0.002 if args.quick else 0.2, options)
    if args.files_markdown:
        options = f" --file-size {args.file_size}" + (f" --rounds {args.rounds}" if args.rounds else "")
        options += f" --sparse-size {args.sparse_size}"
        return write_files(args.files_markdown, args.file_size, args.sparse_size, args.rounds or 3, args.dir, options)
    if args.files:
        from cb3 import bench_files

        return bench_files.main(args.file_size, args.sparse_size, args.rounds or 3, args.dir)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    rounds = args.rounds or (2 if args.quick else 5)
    budget = 0.005 if args.quick else 0.1
    results = measure(sizes, rounds, budget, args.only.split(",") if args.only else None, args.warmup)
    print(report(results))
    missing = missing_peers()
    if missing:
        print(
            "\nnot installed, so not compared: "
            + "; ".join(f"{dist} ({what})" for _, what, dist in missing)
            + f"\ninstall them with: {sys.executable} -m pip install "
            + " ".join(dist for _, _, dist in missing),
            file=sys.stderr,
        )
    if not (args.quick or args.sizes or args.only):
        from cb3 import bench_files

        print()
        bench_files.main(args.file_size, args.sparse_size, min(rounds, 3), args.dir)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {
                    "cb3": cb3.__version__,
                    "python": f"{platform.python_implementation()} {platform.python_version()}",
                    "hpy_abi": cb3.HPY_ABI,
                    "simd": cb3.simd_backend(),
                    "cpu": cpu_name(),
                    "caches": _cb3.cache_tuning(),
                    "load_average": _load_average(),
                    "missing_peers": [dist for _, _, dist in missing],
                    "clock": args.clock,
                    "warmup": args.warmup,
                    "results": [
                        {
                            "case": r.case,
                            "group": groups.get(r.case, "aead"),
                            "size": r.size,
                            "seconds_median": r.seconds,
                            "samples": r.samples,
                        }
                        for r in results
                    ],
                },
                out,
                indent=1,
            )
    return 0


def main(argv: list[str]) -> int:
    """``python -m cb3.bench ARGS`` (the same as ``python -m cb3 bench ARGS``)."""
    parser = argparse.ArgumentParser(prog="python -m cb3 bench", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
