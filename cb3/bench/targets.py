"""``python -m cb3 bench --targets-markdown FILE`` (the per-call targets, each
a ratio of two cases timed in the same rounds) and the generated sections of
the results docs that it and ``--files-markdown`` rewrite."""

import datetime
import os
import platform
import statistics
import sys
from dataclasses import dataclass
from typing import Callable, Optional

import cb3
from cb3 import _cb3
from cb3.chacha20 import ChaCha20

from . import calls
from .calls import Timer, calibrate, cpu_name, human_size, load_average, loop

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
        "encrypt": loop(lambda: cipher.encrypt(nonce, data)),
        "encrypt_detached": loop(lambda: cipher.encrypt_detached(nonce, data)),
        "Stream.encrypt": loop(lambda: stream.encrypt(data)),
        "decrypt": loop(lambda: cipher.decrypt(nonce, sealed)),
        "keyed_hash": loop(lambda: cb3.keyed_hash(key, data)),
        "encrypt_into": loop(lambda: cipher.encrypt_into(nonce, data, None, out)),
        "decrypt_into": loop(lambda: cipher.decrypt_into(nonce, sealed, None, plain)),
    }
    if size >= 1 << 20:
        chacha, own_out = ChaCha20(key, nonce[:8]), bytearray(size)

        def own_back_to_back() -> None:
            chacha.update_into(data, own_out)
            cb3.keyed_hash(key, own_out)

        timers["cb3 ChaCha20 + keyed_hash"] = loop(own_back_to_back)
        timers["cb3 ChaCha20"] = loop(lambda: chacha.update_into(data, own_out))
        # Threads: wall time whatever the clock (CPU time adds up the threads).
        timers["encrypt_into, wall"] = loop(lambda: cipher.encrypt_into(nonce, data, None, out), wall=True)
        timers["encrypt_into max_threads=2, wall"] = loop(lambda: two.encrypt_into(nonce, data, None, out), wall=True)
    try:
        import blake3 as blake3_py
    except ImportError:
        blake3_py = None
    else:
        timers["blake3-py keyed"] = loop(lambda: blake3_py.blake3(data, key=key).digest())
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
    except ImportError:
        return timers
    chapoly, gcm = ChaCha20Poly1305(key), AESGCM(key)
    chapoly_sealed = chapoly.encrypt(nonce12, data, None)
    timers["ChaCha20Poly1305 encrypt"] = loop(lambda: chapoly.encrypt(nonce12, data, None))
    timers["ChaCha20Poly1305 decrypt"] = loop(lambda: chapoly.decrypt(nonce12, chapoly_sealed, None))
    timers["AESGCM encrypt"] = loop(lambda: gcm.encrypt(nonce12, data, None))
    stream_out = bytearray(size)
    openssl = Cipher(algorithms.ChaCha20(key, bytes(8) + nonce[:8]), None).encryptor()
    timers["OpenSSL ChaCha20"] = loop(lambda: openssl.update_into(data, stream_out))
    if blake3_py is not None:

        def back_to_back() -> None:
            # What cb3 is made of, on the same data: the keystream XOR
            # (OpenSSL) into a buffer, then the keyed hash of that buffer.
            Cipher(algorithms.ChaCha20(key, bytes(8) + nonce[:8]), None).encryptor().update_into(data, stream_out)
            blake3_py.blake3(stream_out, key=key).digest()

        timers["ChaCha20 + blake3-py"] = loop(back_to_back)
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
    counts = {key: calibrate(timer, budget) for key, timer in timers.items()}
    samples: dict[tuple[int, str], list[float]] = {key: [] for key in timers}
    for _ in range(rounds):
        for key, timer in timers.items():
            samples[key].append(timer(counts[key]) / counts[key])
    results = []
    for target in targets:
        seconds = {name: statistics.median(values) for (size, name), values in samples.items() if size == target.size}
        results.append((target, target.ratio(seconds)))
    return results


def targets_markdown(results: list[tuple[Target, Optional[float]]], rounds: int, command: str, load: str) -> str:
    """The generated section: how, where and when it was measured, then one
    row per target."""
    lines = [
        BEGIN_TARGETS,
        stamp(command, load)
        + f", {calls.clock_name} clock, medians of {rounds} interleaved rounds. "
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
    load = load_average()
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
    from . import files as bench_files

    def produce(command: str, load: str) -> str:
        rows = bench_files.rows(file_size, sparse_size, rounds, directory)
        return "\n".join([BEGIN_FILES, stamp(command, load) + ".", "", "```", rows, "```", END_FILES])

    return write_section(path, "--files-markdown", "files", options, produce)
