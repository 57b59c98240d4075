"""The chart that opens docs/results/performance.md: encryption throughput
against message size, 64 B to 16 MiB, for cb3 with one thread and with all
cores and for the peers installed, measured by the same `measure.py targets`
run that writes the page's table for this machine's CPU family.

The chart is plain SVG text (no plotting library): both axes logarithmic,
one polyline with a marker per measured size for each implementation, a
legend. It is written next to the page as `performance-SLUG.svg` (one file
per CPU family), and the page's `chart` section, right under its title,
shows the chart of the run that wrote it.
"""

from __future__ import annotations

import math
import os
import statistics
from xml.sax.saxutils import escape, quoteattr

from cb3.cli.speed import human_size

from . import calls, pages
from .timing import calibrate, interleaved

#: 64 B to 16 MiB, a factor of 4 apart.
SIZES = [64 << (2 * i) for i in range(10)]

#: The cases of calls.py the chart draws (those installed), and their legend.
SERIES = {
    "cb3 encrypt": "cb3, one thread",
    "cb3 encrypt max_threads=AUTO": "cb3, all cores (max_threads=cb3.AUTO)",
    "cryptography ChaCha20Poly1305": "cryptography ChaCha20Poly1305",
    "cryptography AESGCM-256": "cryptography AESGCM",
    "PyNaCl XChaCha20-Poly1305": "PyNaCl XChaCha20-Poly1305",
    "pycryptodome XChaCha20-Poly1305": "pycryptodome XChaCha20-Poly1305",
}
COLOURS = ["#1f5fbf", "#0b8a3e", "#d95f02", "#7570b3", "#b5367a", "#8c6d1f"]

#: The page's section that holds the chart.
NAME = "chart"

Throughput = dict[str, dict[int, float]]  # legend -> size -> MB/s (10^6 bytes per second)


def measure_throughput(rounds: int, budget: float, sizes: list[int] = SIZES) -> Throughput:
    """MB/s of each installed series at each size: the median of `rounds`
    interleaved rounds (calls.py's cases, the same timers as `compare`)."""
    cases = [case for case in calls._cases() if case.name in SERIES]  # noqa: SLF001 -- the tools' one list of cases
    timers = {(case.name, size): case.make(size) for case in cases for size in sizes}
    counts = {key: calibrate(timer, budget) for key, timer in timers.items()}
    samples = interleaved(timers, counts, rounds, warm=True)
    found: Throughput = {}
    for name in SERIES:  # the legend's order
        for size in sizes:
            if (name, size) in samples:
                found.setdefault(SERIES[name], {})[size] = size / statistics.median(samples[(name, size)]) / 1e6
    return found


def _ticks(low: float, high: float) -> list[float]:
    """1-2-5 steps of each decade that covers low..high."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for step in (1, 2, 5):
            value = step * 10.0**exponent
            if low <= value <= high:
                ticks.append(value)
    return ticks


def _mb(value: float) -> str:
    return f"{value:g}" if value < 1000 else f"{value / 1000:g}k"


def throughput_svg(throughput: Throughput, title: str, subtitle: str) -> str:
    """The chart as an SVG document."""
    if not throughput or not any(throughput.values()):
        raise ValueError("no measured series to draw")
    width, height = 760, 460
    left, right, top, bottom = 70, 250, 56, 56
    plot_w, plot_h = width - left - right, height - top - bottom
    sizes = sorted({size for series in throughput.values() for size in series})
    values = [v for series in throughput.values() for v in series.values()]
    x_low, x_high = math.log2(min(sizes)), math.log2(max(sizes))
    y_low = 10 ** math.floor(math.log10(min(values)))
    y_high = 10 ** math.ceil(math.log10(max(values)))

    def x(size: int) -> float:
        span = x_high - x_low or 1.0
        return left + (math.log2(size) - x_low) / span * plot_w

    def y(value: float) -> float:
        return top + plot_h - (math.log10(value) - math.log10(y_low)) / (math.log10(y_high) - math.log10(y_low)) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{left}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>',
        f'<text x="{left}" y="40" fill="#555555">{escape(subtitle)}</text>',
        '<g id="x-axis">',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333333"/>',
    ]
    for size in sizes:
        out.append(f'<line x1="{x(size):.1f}" y1="{top}" x2="{x(size):.1f}" y2="{top + plot_h}" stroke="#e5e5e5"/>')
        out.append(f'<text class="tick" x="{x(size):.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
                   f"{escape(human_size(size))}</text>")
    out.append(f'<text class="label" x="{left + plot_w / 2:.1f}" y="{height - 14}" text-anchor="middle">'
               "message size (log scale)</text>")
    out += ["</g>", '<g id="y-axis">',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333333"/>']
    for value in _ticks(y_low, y_high):
        out.append(f'<line x1="{left}" y1="{y(value):.1f}" x2="{left + plot_w}" y2="{y(value):.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text class="tick" x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{_mb(value)}</text>')
    out.append(f'<text class="label" transform="translate(18 {top + plot_h / 2:.1f}) rotate(-90)" '
               'text-anchor="middle">throughput, MB/s (10^6 bytes/s, log scale)</text>')
    out.append("</g>")
    for i, (name, series) in enumerate(throughput.items()):
        colour = COLOURS[i % len(COLOURS)]
        points = [(x(size), y(series[size])) for size in sorted(series)]
        own = name.startswith("cb3")
        out.append(f'<g class="series" data-name={quoteattr(name)}>')
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="{2.5 if own else 1.5}"'
                   + ("" if own else ' stroke-dasharray="5 3"')
                   + f' points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in points)}"/>')
        for (px, py), size in zip(points, sorted(series)):
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}">'
                       f"<title>{escape(name)}: {escape(human_size(size))}, {series[size]:.0f} MB/s</title></circle>")
        legend_y = top + 10 + 20 * i
        out.append(f'<line x1="{left + plot_w + 16}" y1="{legend_y}" x2="{left + plot_w + 40}" y2="{legend_y}" '
                   f'stroke="{colour}" stroke-width="{2.5 if own else 1.5}"' + ("" if own else ' stroke-dasharray="5 3"')
                   + "/>")
        out.append(f'<text x="{left + plot_w + 46}" y="{legend_y + 4}">{escape(name)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def svg_name(slug: str) -> str:
    return f"performance-{slug}.svg"


def write_svg(page: str, slug: str, throughput: Throughput, family_name: str, subtitle: str) -> str:
    """The family's chart, next to the page; returns its file name."""
    name = svg_name(slug)
    with open(os.path.join(os.path.dirname(os.path.abspath(page)), name), "w", encoding="utf-8") as f:
        f.write(throughput_svg(throughput, f"Encryption throughput by message size: {family_name}", subtitle))
    return name


def chart_markdown(name: str, family_name: str, throughput: Throughput) -> str:
    """The page's chart section: the image, and what it shows."""
    begin, end = pages.markers(NAME)
    peers = [series for series in throughput if not series.startswith("cb3")]
    return "\n".join([
        begin,
        f"![Encryption throughput against message size, 64 B to 16 MiB, on {family_name}: "
        f"{'; '.join(throughput)}]({name})",
        "",
        f"Encryption throughput on {family_name}: cb3's `encrypt` on one thread and on all cores "
        f"(`max_threads=cb3.AUTO`), and on one thread the peers installed ({'; '.join(peers) or 'none'}). One "
        "message per call, a new `bytes` object each; the median of the interleaved rounds of the run that wrote "
        "that family's table below (its header says when, on what and under what load); both axes logarithmic.",
        end,
    ])


def place_chart(text: str, section: str) -> str:
    """`text` with its chart section replaced by `section`, or, in a page
    without one, `section` inserted under the page's title."""
    begin, _ = pages.markers(NAME)
    if begin in text:
        return pages.replace_section(text, section, NAME)
    title_end = text.find("\n", text.find("# ")) if text.startswith("# ") else -1
    if title_end < 0:
        return section + "\n\n" + text
    return text[: title_end + 1] + "\n" + section + "\n" + text[title_end + 1 :]


def without_chart(text: str) -> str:
    """`text` as it would read without a chart section (what place_chart added)."""
    begin, end = pages.markers(NAME)
    start = text.find(begin)
    if start < 0:
        return text
    stop = text.index(end, start) + len(end)
    before, after = text[:start], text[stop:]
    if before.endswith("\n\n") and after.startswith("\n"):
        return before[:-1] + after[1:]
    return before + after.lstrip("\n")
