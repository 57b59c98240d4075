"""Checks the built site as a reader sees it (noxfile.py's docs step).

    python docs/_ext/cb3_pagecheck.py links HTML_DIR
    python docs/_ext/cb3_pagecheck.py pages PAGE.dom.html PAGE.png TEXT... -- ...

links: every relative link (href, src) of every built page must lead to a
file of the site and, with a #fragment, to an element with that id there.
(Sphinx's linkcheck builder checks only URLs with a scheme, all of which
point off this machine, which has no network.)

For each page: headless Chromium's DOM (after scripts ran) must hold every
TEXT (a heading, a signature, a C function), must not be an error page, and
must have loaded the site's stylesheet; the screenshot must show a rendered
page, not a blank one (PNG decoding: asv_benchmarks/tools/asvtool.py's read_png).
"""

from __future__ import annotations

import collections
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "asv_benchmarks"))
from tools.asvtool import read_png  # noqa: E402


def check(dom_file: str, png_file: str, texts: list[str]) -> list[str]:
    dom = Path(dom_file).read_text(encoding="utf-8", errors="replace")
    failures = [f"{dom_file}: the page does not show {text!r}" for text in texts if text not in dom]
    # What autodoc shows for a constant that has no doc of its own.
    for builtin_doc in ("Convert a number or string to an integer", "str(object=&#39;&#39;) -&gt; str", "Built-in immutable sequence"):
        if builtin_doc in dom:
            failures.append(f"{dom_file}: shows a builtin type's docstring ({builtin_doc!r}) for a constant")
    if "_static/alabaster.css" not in dom and "_static/basic.css" not in dom:
        failures.append(f"{dom_file}: no stylesheet of the site")
    if "<title>" not in dom or "404" in dom.split("<title>", 1)[1].split("</title>", 1)[0]:
        failures.append(f"{dom_file}: no title, or an error page")
    width, height, channels, pixels = read_png(png_file)
    counts: collections.Counter[bytes] = collections.Counter(
        pixels[i : i + 3] for i in range(0, len(pixels), channels * 7)  # every 7th pixel is plenty
    )
    dark = sum(n for rgb, n in counts.items() if sum(rgb) < 200)
    if len(counts) < 16 or dark < 200:
        failures.append(f"{png_file}: the screenshot is (nearly) blank ({len(counts)} colours, {dark} dark pixels)")
    print(f"cb3_pagecheck: {Path(dom_file).name}: {len(texts)} texts found, {width}x{height} screenshot, "
          f"{len(counts)} colours, {dark} dark pixels sampled")
    return failures


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)
            elif name == "id" and value is not None:
                self.ids.add(value)


def check_links(html_dir: str) -> list[str]:
    root = Path(html_dir).resolve()
    pages: dict[Path, _Links] = {}
    for path in root.rglob("*.html"):
        parser = _Links()
        parser.feed(path.read_text(encoding="utf-8"))
        pages[path] = parser
    failures, checked = [], 0
    for path, parser in sorted(pages.items()):
        for link in parser.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("mailto:"):
                continue  # off the site
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            checked += 1
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or root not in target.parents:
                failures.append(f"{path.relative_to(root)}: {link}: no such file in the site")
            elif parts.fragment and target in pages and unquote(parts.fragment) not in pages[target].ids:
                failures.append(f"{path.relative_to(root)}: {link}: no id {parts.fragment!r} there")
    print(f"cb3_pagecheck: {checked} internal links of {len(pages)} pages checked")
    return failures


def main(argv: list[str]) -> int:
    command, argv = argv[0], argv[1:]
    if command == "links":
        failures = check_links(argv[0])
        for failure in failures:
            print("cb3_pagecheck FAILED:", failure, file=sys.stderr)
        return 1 if failures else 0
    failures: list[str] = []
    groups: list[list[str]] = [[]]
    for arg in argv:
        if arg == "--":
            groups.append([])
        else:
            groups[-1].append(arg)
    for dom, png, *texts in (g for g in groups if g):
        failures += check(dom, png, texts)
    for failure in failures:
        print("cb3_pagecheck FAILED:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
