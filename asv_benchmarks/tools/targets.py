"""`measure.py targets PAGE`: the per-call targets, each a ratio of two
cases timed in the same interleaved rounds, written into PAGE's section for
the CPU family of this machine (docs/results/performance.md keeps one per
family: pages.py)."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
from dataclasses import dataclass
from typing import Optional

import cb3
from cb3.chacha20 import ChaCha20
from cb3.cli.speed import human_size

from . import chart, pages, reference, timing
from .machine import CpuFamily, cpu_family, cpu_name, load_average
from .timing import Timer, calibrate, loop

#: The pages' section kind: `<!-- BEGIN generated: targets cpu=SLUG -->`.
KIND = "targets"


@dataclass
class Target:
    """One target: `ours` / `peer` (times; for a speed-up,
    `peer` / `ours`) must be at most (at least, for a speed-up) `limit`.
    Rows without a limit are evidence for the floor of a target."""

    what: str
    size: int
    ours: str
    peer: str
    limit: Optional[float]
    speedup: bool = False

    def ratio(self, ours: float, peer: float) -> float:
        """The ratio of one round, from its two times."""
        return peer / ours if self.speedup else ours / peer

    def met(self, ratio: float) -> bool:
        assert self.limit is not None
        return ratio >= self.limit if self.speedup else ratio <= self.limit


@dataclass(frozen=True)
class Ratios:
    """A target's ratios over the rounds: their median, and their 10th and
    90th percentiles (how far a noisy machine moved it). Each round's ratio
    pairs the two cases' times of that round (seconds apart, where the
    medians of each case's times would pair any round with any other), so a
    drift of the machine's speed over the run (a neighbour's load, the
    clock) cancels out of it."""

    median: float
    p10: float
    p90: float

    @classmethod
    def of(cls, ratios: list[float]) -> "Ratios":
        if len(ratios) < 2:
            return cls(ratios[0], ratios[0], ratios[0])
        deciles = statistics.quantiles(ratios, n=10, method="inclusive")
        return cls(statistics.median(ratios), deciles[0], deciles[-1])


BIG = 16 << 20

TARGETS = [
    Target("`encrypt` / cryptography ChaCha20Poly1305 `encrypt`", 64, "encrypt", "ChaCha20Poly1305 encrypt", 0.55),
    Target("`encrypt` / cryptography AESGCM `encrypt`", 64, "encrypt", "AESGCM encrypt", 0.85),
    Target("`encrypt` / cryptography ChaCha20Poly1305 `encrypt`", 256, "encrypt", "ChaCha20Poly1305 encrypt", 0.85),
    Target("`encrypt` / cryptography ChaCha20Poly1305 `encrypt`", 4096, "encrypt", "ChaCha20Poly1305 encrypt", 1.5),
    Target("`decrypt` / cryptography ChaCha20Poly1305 `decrypt`", 64, "decrypt", "ChaCha20Poly1305 decrypt", 0.55),
    # The fixed cost holds for every form of the call: detached, _into, Stream.
    Target("`encrypt_detached` / cryptography ChaCha20Poly1305 `encrypt`", 64, "encrypt_detached", "ChaCha20Poly1305 encrypt", 0.55),
    Target("`encrypt_into` / cryptography ChaCha20Poly1305 `encrypt`", 64, "encrypt_into", "ChaCha20Poly1305 encrypt", 0.55),
    Target("`decrypt_into` / cryptography ChaCha20Poly1305 `decrypt`", 64, "decrypt_into", "ChaCha20Poly1305 decrypt", 0.55),
    Target("`Stream.encrypt` / cryptography ChaCha20Poly1305 `encrypt`", 64, "Stream.encrypt", "ChaCha20Poly1305 encrypt", 0.55),
    Target("`keyed_hash` / blake3-py keyed hash", 64, "keyed_hash", "blake3-py keyed", 0.5),
    Target("`encrypt_into` / (OpenSSL ChaCha20 + blake3-py keyed), one thread", BIG, "encrypt_into", "ChaCha20 + blake3-py", 1.02),
    # Decryption into a buffer others can see stages the ciphertext once
    # more in private memory (verify before writing): a looser limit.
    Target("`decrypt_into` / (OpenSSL ChaCha20 + blake3-py keyed), one thread", BIG, "decrypt_into", "ChaCha20 + blake3-py", 1.35),
    Target("`encrypt_into`: speed-up of `max_threads=2` over 1 (wall time)", BIG, "encrypt_into max_threads=2, wall", "encrypt_into, wall", 1.7, True),
    # The fused pass at its own two primitives' cost (run back to back),
    # and cb3's ChaCha20 core at OpenSSL's from 64 KiB up.
    Target("`encrypt_into` / (cb3's ChaCha20 + cb3 `keyed_hash`), one thread", BIG, "encrypt_into", "cb3 ChaCha20 + keyed_hash", 1.02),
    # Evidence for that row's floor, in Rust without Python (the reference
    # binary): the pass against the same two primitives, and its XOR with
    # the private copy of each piece against the XOR alone.
    Target("Rust, no Python: `seal` / (cb3's ChaCha20 + keyed BLAKE3)", BIG, "Rust seal", "Rust ChaCha20 + keyed BLAKE3", None),
    Target("Rust: `seal`'s XOR with its private copy / without it", BIG, "Rust seal XOR + private copy", "Rust seal XOR", None),
    *(
        Target("cb3 `ChaCha20.update_into` / OpenSSL ChaCha20 `update_into`", size, "cb3 ChaCha20", "OpenSSL ChaCha20", 1.0)
        for size in (64 << 10, 1 << 20, BIG)
    ),
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
    chacha, own_out = ChaCha20(key, nonce[:8]), bytearray(size)
    timers["cb3 ChaCha20"] = loop(lambda: chacha.update_into(data, own_out))
    if size >= 1 << 20:

        def own_back_to_back() -> None:
            chacha.update_into(data, own_out)
            cb3.keyed_hash(key, own_out)

        timers["cb3 ChaCha20 + keyed_hash"] = loop(own_back_to_back)
        if reference.available():
            for name, mode in (
                ("Rust seal", "seal"),
                ("Rust ChaCha20 + keyed BLAKE3", "parts"),
                ("Rust seal XOR", "seal_xor"),
                ("Rust seal XOR + private copy", "seal_xor_copying"),
            ):
                timers[name] = reference.timers(mode)(size)
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


def measure_targets(rounds: int, budget: float, targets: list[Target] = TARGETS) -> list[tuple[Target, Optional[Ratios]]]:
    """Every target's ratios (None where a peer is not installed), from
    interleaved rounds of the cases it compares (all sizes in one loop, like
    `measure`)."""
    wanted = {(t.size, name) for t in targets for name in (t.ours, t.peer)}
    timers: dict[tuple[int, str], Timer] = {}
    for size in sorted({t.size for t in targets}):
        for name, timer in _target_timers(size).items():
            if (size, name) in wanted:
                timers[(size, name)] = timer
    counts = {key: calibrate(timer, budget) for key, timer in timers.items()}
    samples = timing.interleaved(timers, counts, rounds, warm=True)
    results: list[tuple[Target, Optional[Ratios]]] = []
    for target in targets:
        ours, peer = samples.get((target.size, target.ours)), samples.get((target.size, target.peer))
        if ours is None or peer is None:
            results.append((target, None))
        else:
            results.append((target, Ratios.of([target.ratio(a, b) for a, b in zip(ours, peer)])))
    return results


def shown(ratio: float, limit: Optional[float]) -> str:
    """`ratio` to two decimals, or three where two would read as the limit
    itself (a "1.35" that misses "≤ 1.35" by 0.004)."""
    text = f"{ratio:.2f}"
    return f"{ratio:.3f}" if limit is not None and text == f"{limit:.2f}" else text


def targets_markdown(
    results: list[tuple[Target, Optional[Ratios]]], rounds: int, command: str, load: str, after: str, family: CpuFamily
) -> str:
    """The generated section of `family`: a heading with its name, how,
    where and when it was measured, then one row per target."""
    begin, end = pages.family_markers(KIND, family.slug)
    lines = [
        begin,
        f"## {family.name}",
        "",
        pages.stamp(command, load, after)
        + f", {timing.clock_name} clock, {rounds} interleaved rounds (each in a new seeded random order). "
        "Ratio = cb3's time / the peer's in the same round (below 1: cb3 faster); for the thread row, the "
        "speed-up (one thread's time / two threads'). Measured: the median of the rounds' ratios, met or not "
        "against the target; p10-p90: the 10th and 90th percentiles of the rounds' ratios, how far the "
        "machine's noise moved them.",
        "",
        "| size | ratio | measured | p10-p90 | target | met |",
        "|---|---|---:|---:|---:|---|",
    ]
    for target, ratios in results:
        limit = "—" if target.limit is None else f"≥ {target.limit:g}" if target.speedup else f"≤ {target.limit:g}"
        if ratios is None:
            measured, spread, met = "—", "—", "not measured (peer not installed)"
        else:
            measured, spread = shown(ratios.median, target.limit), f"{ratios.p10:.2f}-{ratios.p90:.2f}"
            if target.limit is None:
                met = "(evidence)"
            else:
                met = "met" if target.met(ratios.median) else "**not met**"
        lines.append(f"| {human_size(target.size)} | {target.what} | {measured} | {spread} | {limit} | {met} |")
    lines.append(end)
    return "\n".join(lines)


def write_targets(path: str, rounds: int, budget: float, options: str) -> int:
    """The section of this machine's CPU family (`cpu_family()`) in the doc
    at `path`, measured and rewritten (or appended); other families' stay.
    The same run measures the chart that opens the page (chart.py): its SVG
    beside the page, its section under the page's title."""
    family = cpu_family()
    chart_section = ""

    def produce(command: str, load: str) -> str:
        nonlocal chart_section
        results = measure_targets(rounds, budget)
        throughput = chart.measure_throughput(rounds, budget)
        after = load_average()
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        subtitle = (f"cb3 {cb3.__version__}, {platform.python_implementation()} {platform.python_version()}, "
                    f"{cpu_name()}, {when}, load {load}")
        name = chart.write_svg(path, family.slug, throughput, family.name, subtitle)
        chart_section = chart.chart_markdown(name, family.name, throughput)
        return targets_markdown(results, rounds, command, load, after, family)

    def place(text: str, section: str) -> str:
        text = pages.place_family(text, KIND, family.slug, section)
        return chart.place_chart(text, chart_section) if chart_section else text

    return pages.write_section(path, "targets", options, place, produce)
