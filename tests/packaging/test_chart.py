"""The chart that opens docs/results/performance.md (asv_benchmarks/tools/
chart.py): the SVG writer (valid XML, both axes, one series per
implementation, points where the figures put them), its section under the
page's title, and a `measure.py targets --quick` run writing both. Figures
are never judged."""

from __future__ import annotations

import math
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "asv_benchmarks"))  # the tools package, never a cb3 source tree
from tools import chart, cli, machine, pages, targets  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
DOC = ROOT / "docs" / "results" / "performance.md"
FIGURES = {
    "cb3, one thread": {size: 50.0 * (i + 1) for i, size in enumerate(chart.SIZES)},
    "cb3, all cores <AUTO> & more": {size: 60.0 * (i + 1) ** 1.5 for i, size in enumerate(chart.SIZES)},
    "a peer": {64: 20.0, 1024: 200.0, 16 << 20: 1500.0},  # some sizes only
}


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    return root


def series_of(root: ET.Element) -> dict[str, list[tuple[float, float]]]:
    found = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") == "series":
            line = group.find(f"{SVG}polyline")
            found[group.get("data-name")] = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
    return found


def test_the_svg_has_both_axes_and_one_series_per_implementation():
    root = parse(chart.throughput_svg(FIGURES, "Title & <more>", "subtitle"))
    axes = {g.get("id"): g for g in root.iter(f"{SVG}g") if g.get("id")}
    x_ticks = [t.text for t in axes["x-axis"].iter(f"{SVG}text") if t.get("class") == "tick"]
    assert x_ticks == ["64 B", "256 B", "1 KiB", "4 KiB", "16 KiB", "64 KiB", "256 KiB", "1 MiB", "4 MiB", "16 MiB"]
    y_ticks = [t.text for t in axes["y-axis"].iter(f"{SVG}text") if t.get("class") == "tick"]
    assert y_ticks[0] == "10" and "1k" in y_ticks and len(y_ticks) >= 6
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "label"]
    assert any("message size" in label for label in labels) and any("MB/s" in label for label in labels)
    drawn = series_of(root)
    assert list(drawn) == list(FIGURES)
    for name, points in drawn.items():
        assert len(points) == len(FIGURES[name])
        xs = [x for x, _ in points]
        assert xs == sorted(xs) and len(set(xs)) == len(xs)
    # Log scales: equal factors are equal distances, and more throughput is higher (smaller y).
    one = drawn["cb3, one thread"]
    steps = [b[0] - a[0] for a, b in zip(one, one[1:])]
    assert max(steps) - min(steps) < 0.2
    assert all(b[1] < a[1] for a, b in zip(one, one[1:]))
    # The 16 MiB points of the three series line up on the same x.
    assert len({points[-1][0] for points in drawn.values()}) == 1
    # Every point inside the picture.
    width, height = float(root.get("width")), float(root.get("height"))
    assert all(0 < x < width and 0 < y < height for points in drawn.values() for x, y in points)
    # 20 -> 200 MB/s is one decade, 200 -> 1500 log10(7.5) of one.
    (_, low), (_, mid), (_, high) = drawn["a peer"]
    assert math.isclose((mid - high) / (low - mid), math.log10(7.5), rel_tol=0.02)


def test_the_svg_refuses_nothing_to_draw():
    with pytest.raises(ValueError, match="no measured series"):
        chart.throughput_svg({}, "t", "s")


def test_the_chart_section_goes_under_the_title_and_is_replaced_after():
    page = "# Title\n\nprose\n\n## More\n"
    section = chart.chart_markdown("performance-x.svg", "Family", {"cb3, one thread": {64: 1.0}, "a peer": {64: 1.0}})
    begin, end = pages.markers(chart.NAME)
    assert section.startswith(begin) and section.endswith(end) and "](performance-x.svg)" in section
    assert "a peer" in section
    placed = chart.place_chart(page, section)
    assert placed.startswith("# Title\n\n" + section + "\n\nprose\n")
    assert chart.without_chart(placed) == page
    again = chart.place_chart(placed, section.replace("performance-x", "performance-y"))
    assert again.count(begin) == 1 and "performance-y.svg" in again and "performance-x.svg" not in again


def test_a_targets_run_writes_the_chart_and_its_section(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text(DOC.read_text(encoding="utf-8"), encoding="utf-8")
    assert cli.main(["targets", str(doc), "--quick"]) == 0
    svg = tmp_path / chart.svg_name(machine.cpu_family().slug)
    drawn = series_of(parse(svg.read_text(encoding="utf-8")))
    assert list(drawn)[:2] == ["cb3, one thread", "cb3, all cores (max_threads=cb3.AUTO)"]
    assert all(len(points) == len(chart.SIZES) for points in drawn.values())
    text = doc.read_text(encoding="utf-8")
    begin = pages.markers(chart.NAME)[0]
    # The chart opens the page: under its title, before the method and every family's table.
    assert text.index(begin) < text.index("Written by") < pages.family_sections(text, targets.KIND)[0][1]
    assert text.startswith("# ") and text.split("\n\n", 1)[1].startswith(begin)
    assert f"]({svg.name})" in text


def test_the_committed_page_opens_with_its_chart():
    text = DOC.read_text(encoding="utf-8")
    begin, end = pages.markers(chart.NAME)
    assert text.split("\n\n", 1)[1].startswith(begin)
    section = text[text.index(begin) : text.index(end)]
    image = re.search(r"\]\((performance-[a-z0-9-]+\.svg)\)", section)[1]
    drawn = series_of(parse((DOC.parent / image).read_text(encoding="utf-8")))
    assert "cb3, one thread" in drawn and "cb3, all cores (max_threads=cb3.AUTO)" in drawn
    assert len(drawn) >= 3  # and at least one peer
