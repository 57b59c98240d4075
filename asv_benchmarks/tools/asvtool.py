"""`measure.py asv`: helpers around asv for cb3 (docs/performance.md,
section asv).

    python asv_benchmarks/measure.py asv machine NAME
        Registers this machine under NAME with its details (`asv machine
        --yes --machine NAME` alone records only the name).
    python asv_benchmarks/measure.py asv config OUT_DIR
        Writes OUT_DIR/asv.conf.json: this checkout's suite, with env, results
        and html under OUT_DIR (noxfile.py's asv step: the committed baseline
        results are copied there, never written).
    python asv_benchmarks/measure.py asv smoke [--max-size BYTES]
        Calls every benchmark once per parameter combination (sizes up to
        BYTES) in this process, against the cb3 that Python imports: catches
        a broken benchmark in seconds, where asv spends a process on each.
    python asv_benchmarks/measure.py asv offline HTML_DIR
        Makes `asv publish`'s site load nothing from the internet: the
        jQuery/flot/Bootstrap/... files it takes from CDNs are copied from
        Debian's packages into HTML_DIR/vendor/ and index.html points there.
    python asv_benchmarks/measure.py asv check-page DOM_FILE PNG_FILE NAME...
        Asserts that a headless-Chromium DOM dump of a published graph page is
        asv's page (not its error page), names the benchmarks NAME... and
        has plot axes, and that the screenshot PNG shows plotted series.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import struct
import sys
import zlib

#: asv_benchmarks/: the suite's configuration and its benchmarks/ package.
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)


# ---------------------------------------------------------------- machine

def cpu_description() -> str:
    """The CPU model as cb3's engine names it, with the SIMD backend cb3
    picks there (a VM often names its CPU only "Intel(R) Xeon(R) Processor");
    asv's own description where this interpreter has no cb3."""
    try:
        import cb3
    except ImportError:
        from asv import util

        return util.get_cpu_info()
    from .machine import cpu_maker, cpu_name

    return f"{cpu_name()} ({cpu_maker()}, SIMD {cb3.simd_backend()})"


def machine(name: str) -> None:
    """Writes ~/.asv-machine.json's entry for name with every field filled
    (`asv machine --yes --machine NAME` stores only the fields that differ
    from its defaults, so the results would carry the name alone)."""
    from asv.machine import Machine, MachineCollection

    info = Machine.get_defaults()
    info.update(machine=name, cpu=cpu_description())
    MachineCollection.save(name, info)
    print(f"asv machine {name}: " + ", ".join(f"{k}={info[k]}" for k in ("cpu", "num_cpu", "ram", "os")))


# ---------------------------------------------------------------- config

def load_config(path: str) -> dict:
    from asv import util

    return util.load_json(path, js_comments=True)


def config(out_dir: str) -> str:
    """A copy of asv_benchmarks/asv.conf.json whose outputs all go to out_dir."""
    out_dir = os.path.abspath(out_dir)
    conf = load_config(os.path.join(HERE, "asv.conf.json"))
    conf.update(
        repo=ROOT,
        benchmark_dir=os.path.join(HERE, conf["benchmark_dir"]),
        env_dir=os.path.join(out_dir, "env"),
        results_dir=os.path.join(out_dir, "results"),
        html_dir=os.path.join(out_dir, "html"),
        # The checked-out commit, on any branch (in CI that is main).
        branches=["HEAD"],
    )
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "asv.conf.json")
    with open(path, "w") as f:
        json.dump(conf, f, indent=4)
    return path


# ---------------------------------------------------------------- smoke

def smoke(max_size: int) -> None:
    import importlib
    import inspect
    import itertools
    import pkgutil
    import time

    sys.path.insert(0, HERE)
    import benchmarks

    calls, started = 0, time.perf_counter()
    for module_info in pkgutil.iter_modules(benchmarks.__path__):
        if not module_info.name.startswith("bench_"):
            continue
        module = importlib.import_module(f"benchmarks.{module_info.name}")
        for class_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            for method_name in sorted(vars(cls)):
                if not method_name.startswith(("time_", "track_")):
                    continue
                method = getattr(cls, method_name)
                params = getattr(method, "params", getattr(cls, "params", []))
                if params and not isinstance(params[0], (list, tuple)):
                    params = [params]
                for combo in itertools.product(*params) if params else [()]:
                    if any(isinstance(p, int) and p > max_size for p in combo):
                        continue
                    instance = cls()
                    try:
                        for _ in range(2):  # the first call builds the inputs
                            value = getattr(instance, method_name)(*combo)
                    except NotImplementedError:
                        continue  # asv: skipped
                    except Exception as exc:
                        raise SystemExit(f"asvtool smoke: {module_info.name}.{class_name}.{method_name}{combo}: {exc!r}")
                    finally:
                        if hasattr(instance, "teardown"):
                            instance.teardown(*combo)
                    if method_name.startswith("track_") and not isinstance(value, (int, float)):
                        raise SystemExit(f"asvtool smoke: {class_name}.{method_name}{combo} returned {value!r}")
                    calls += 1
    print(f"asvtool smoke: {calls} benchmark calls (sizes <= {max_size}) passed in {time.perf_counter() - started:.1f} s")


# ---------------------------------------------------------------- offline

# The files asv 0.6's www/index.html loads from CDNs, and where Debian has
# them (package in the comment; noxfile.py's asv step installs them).
# flot: Debian's libjs-jquery-flot is flot 4; asv wants 0.8.3, which
# libghc-js-flot-data ships. jQuery 3.6 (libjs-jquery) for asv's 3.3.1 and
# Bootstrap 3.4.1 (libjs-bootstrap) for its 3.1.1 are API-compatible minor
# updates. flot-orderbars has no Debian package: vendor/ gets the small
# implementation below.
VENDOR = {
    "jquery-": "/usr/share/javascript/jquery/jquery.min.js",  # libjs-jquery
    "flot/0.8.3/jquery.flot.min.js": "/usr/share/haskell-js-flot/jquery.flot.min.js",  # libghc-js-flot-data
    "flot/0.8.3/jquery.flot.time.min.js": "/usr/share/haskell-js-flot/jquery.flot.time.min.js",
    "flot/0.8.3/jquery.flot.selection.min.js": "/usr/share/haskell-js-flot/jquery.flot.selection.min.js",
    "flot/0.8.3/jquery.flot.categories.min.js": "/usr/share/haskell-js-flot/jquery.flot.categories.min.js",
    "stupidtable": "/usr/share/javascript/jquery-stupidtable/stupidtable.min.js",  # libjs-jquery-stupidtable
    "blueimp-md5": "/usr/share/javascript/blueimp-md5/md5.min.js",  # node-blueimp-md5
    "bootstrap.min.js": "/usr/share/javascript/bootstrap/js/bootstrap.min.js",  # libjs-bootstrap
    "bootstrap.min.css": "/usr/share/javascript/bootstrap/css/bootstrap.min.css",
    "jquery.flot.orderBars.js": None,  # ORDER_BARS below
}

# flot's "order" option for bar series (asv sets bars.order when it plots a
# parameter as categories): shifts each ordered bar series sideways so the
# bars of one x value stand side by side instead of on top of each other.
ORDER_BARS = """/* Minimal flot plugin for the bars.order option (cb3, MIT): series with
   bars.order = k are shifted by (k - (n - 1) / 2) * barWidth and narrowed to
   barWidth / n, n being the number of ordered bar series. */
(function ($) {
    function init(plot) {
        plot.hooks.processRawData.push(function (plot, series) {
            if (!series.bars || !series.bars.show || series.bars.order == null) return;
            var all = plot.getData(), ordered = [];
            for (var i = 0; i < all.length; i++)
                if (all[i].bars && all[i].bars.show && all[i].bars.order != null) ordered.push(all[i]);
            ordered.sort(function (a, b) { return a.bars.order - b.bars.order; });
            var n = ordered.length, width = series.bars.barWidth || 0.8, rank = ordered.indexOf(series);
            if (n < 2 || rank < 0) return;
            series.bars.barWidth = width / n;
            series.bars.align = "center";
            var shift = (rank - (n - 1) / 2) * width / n;
            if (series.bars.horizontal) return;
            series.bars.offset = shift;
            series.data = series.data.map(function (p) {
                return p == null ? p : [typeof p[0] === "number" ? p[0] + shift : p[0]].concat(p.slice(1));
            });
        });
    }
    $.plot.plugins.push({ init: init, name: "orderBars", version: "cb3" });
})(jQuery);
"""

TAG = re.compile(r"<(script|link)\b[^>]*?(?:src|href)=\"(https?://[^\"]+)\"[^>]*>", re.S)


def offline(html_dir: str) -> None:
    index = os.path.join(html_dir, "index.html")
    with open(index, encoding="utf-8") as f:
        html = f.read()
    vendor = os.path.join(html_dir, "vendor")
    os.makedirs(vendor, exist_ok=True)

    def local(match: re.Match) -> str:
        tag, url = match.group(0), match.group(2)
        if match.group(1) == "link" and "stylesheet" not in tag:
            return tag  # a link that is not loaded (e.g. an alternate feed)
        keys = [key for key in VENDOR if key in url]
        if len(keys) != 1:
            raise SystemExit(f"asvtool offline: no local copy known for {url} (asv's template changed?)")
        source = VENDOR[keys[0]]
        name = os.path.basename(source) if source else url.rsplit("/", 1)[1]
        target = os.path.join(vendor, name)
        if source is None:
            with open(target, "w", encoding="utf-8") as out:
                out.write(ORDER_BARS)
        elif not os.path.isfile(source):
            raise SystemExit(f"asvtool offline: {source} is missing (install its Debian package)")
        else:
            shutil.copyfile(source, target)
        # Drop the CDN's subresource-integrity hash (Debian's build differs)
        # and the CORS attributes; keep onerror (asv's error page) as it is.
        tag = tag.replace(url, "vendor/" + name)
        tag = re.sub(r'\s(integrity|crossorigin|referrerpolicy)="[^"]*"', "", tag)
        return tag

    html = TAG.sub(local, html)
    remote = [m.group(0) for m in TAG.finditer(html) if m.group(1) == "script" or "stylesheet" in m.group(0)]
    if remote:
        raise SystemExit(f"asvtool offline: index.html still loads from the network: {remote}")
    with open(index, "w", encoding="utf-8") as f:
        f.write(html)
    print(f"asvtool offline: {index} loads {len(os.listdir(vendor))} files from vendor/, none from the network")


# ---------------------------------------------------------------- check-page

def read_png(path: str) -> tuple[int, int, int, bytes]:
    """(width, height, channels, raw pixel rows) of an 8-bit non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    assert header is not None, "no IHDR"
    width, height, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        raise SystemExit(f"{path}: unsupported PNG (depth {depth}, color type {color}, interlace {interlace})")
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return width, height, channels, bytes(out)


def check_page(dom_file: str, png_file: str, names: list[str]) -> None:
    with open(dom_file, encoding="utf-8", errors="replace") as f:
        dom = f.read()
    failures = []
    if "continental origin of swallow" in dom or 'id="main-graph"' not in dom:
        failures.append("the DOM is asv's error page (a script failed to load), not its graph page")
    for name in names:
        if name not in dom:
            failures.append(f"the DOM does not name the benchmark {name!r}")
    # flot draws the plot on canvases and writes the axis ticks as HTML.
    ticks = re.findall(r'class="[^"]*tickLabel[^"]*"[^>]*>([^<]*)<', dom)
    if "<canvas" not in dom or len(ticks) < 4:
        failures.append(f"no flot plot in the DOM (canvas, {len(ticks)} tick labels)")
    if re.search(r'id="error"[^>]*style="[^"]*display:\s*block', dom):
        failures.append("asv shows its error dialog")

    # The legend's colour swatches name the colour of each plotted series.
    legend = [tuple(int(v) for v in m) for m in re.findall(r"border:\s*5px solid rgb\((\d+),\s*(\d+),\s*(\d+)\)", dom)]
    if not legend:
        failures.append("no plot legend in the DOM (no series)")
    # Grey series would match anti-aliased text and the frame: coloured ones only.
    legend = [c for c in legend if max(c) - min(c) > 40]

    width, height, channels, pixels = read_png(png_file)
    # Pixel colours right of the legend (which sits top left in the plot):
    # the plotted points and lines themselves, and the overview plot below.
    counts: collections.Counter = collections.Counter()
    stride, left = width * channels, int(width * 0.4) * channels
    for y in range(height):
        row = pixels[y * stride + left:(y + 1) * stride]
        counts.update(row[i:i + 3] for i in range(0, len(row), channels))
    colors = set(counts)
    drawn = sum(n for rgb, n in counts.items()
                if any(sum(abs(u - v) for u, v in zip(rgb, c)) < 30 for c in legend))
    if len(colors) < 16:
        failures.append(f"the screenshot is (nearly) blank: {len(colors)} colours")
    if drawn < 12:
        failures.append(f"the screenshot shows no plotted data ({drawn} pixels in the series' colours)")
    print(f"asvtool check-page: {width}x{height} screenshot, {len(colors)} colours, "
          f"{len(legend)} series, {drawn} data pixels, {len(ticks)} tick labels, benchmarks {names} named")
    if failures:
        raise SystemExit("asvtool check-page FAILED:\n  " + "\n  ".join(failures))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="measure.py asv", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("machine")
    p.add_argument("name")
    p = sub.add_parser("config")
    p.add_argument("out_dir")
    p = sub.add_parser("smoke")
    p.add_argument("--max-size", type=int, default=64 * 1024)
    p = sub.add_parser("offline")
    p.add_argument("html_dir")
    p = sub.add_parser("check-page")
    p.add_argument("dom_file")
    p.add_argument("png_file")
    p.add_argument("names", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "machine":
        machine(args.name)
    elif args.command == "config":
        print(config(args.out_dir))
    elif args.command == "smoke":
        smoke(args.max_size)
    elif args.command == "offline":
        offline(args.html_dir)
    else:
        check_page(args.dom_file, args.png_file, args.names)
    return 0
