"""What installing cb3 from a checkout costs, measured: the generated page
docs/results/resources.md.

    python -P scripts/resources.py [--page docs/results/resources.md] [--test-dir .test]

Clones HEAD into a temporary directory (a fresh checkout: no cargo or
setuptools output to reuse), runs the README's install command there exactly
as the README writes it, and records how long it took and what it left on
disk. With --test-dir (after a full `bash scripts/test.sh`), also the size of
what the test command wrote: that directory and the caches it names. Rewrites
the page's generated section, between <!-- BEGIN generated: resources -->
and <!-- END generated: resources -->. Needs an interpreter with cb3
installed (the stamp and the section markers are the measuring tools', asv_benchmarks/tools/pages.py).
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results" / "resources.md"
# The README's set-up command: an indented line of its Install section.
INSTALL = re.compile(r"^    (python3 -m venv \.venv && .*)$", re.M)
# What the test command writes outside the checkout is named cb3-*: the caches /var/cache/cb3-* (as root)
# and ~/.cache/cb3-* (docs/development.md, "What the test command writes, and cleaning up").
CACHE_PATTERNS = ["/var/cache/cb3-*", "~/.cache/cb3-*"]


def caches() -> list[str]:
    """The caches that exist now, as the page names them (~ for the home directory)."""
    found = []
    for pattern in CACHE_PATTERNS:
        home = pattern.startswith("~")
        for path in sorted(Path(os.path.expanduser(pattern)).parent.glob(Path(pattern).name)):
            found.append("~/" + str(path.relative_to(Path.home())) if home else str(path))
    return found


def install_command() -> str:
    found = INSTALL.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    if len(found) != 1:
        sys.exit(f"README.md: expected one install command line, found {found}")
    return found[0]


def disk_usage(path: Path) -> int:
    """Bytes of the files under ``path`` (as du -sb)."""
    if not path.exists():
        return 0
    return int(subprocess.run(["du", "-sb", str(path)], check=True, capture_output=True, text=True).stdout.split()[0])


def human(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def measure_install(command: str) -> tuple[float, list[tuple[str, int]]]:
    with tempfile.TemporaryDirectory(prefix="cb3-install-") as tmp:
        clone = Path(tmp) / "cb3"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("CARGO_TARGET_DIR", "CB3_STATICLIB", "VIRTUAL_ENV")}
        started = time.perf_counter()
        subprocess.run(["bash", "-c", command], cwd=clone, env=env, check=True, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - started
        tracked = disk_usage(clone / ".git")
        sizes = [(".venv/ (cb3 installed)", disk_usage(clone / ".venv")),
                 ("build/ (setuptools and cargo output)", disk_usage(clone / "build")),
                 ("rustlib/target/", disk_usage(clone / "rustlib" / "target")),
                 ("the checkout in all, less .git", disk_usage(clone) - tracked)]
    return seconds, [(what, n) for what, n in sizes if n]


def section(command: str, seconds: float, sizes: list[tuple[str, int]], test_dir: str | None) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "asv_benchmarks"))
    from tools.machine import load_average as _load_average
    from tools.pages import markers, stamp

    begin, end = markers("resources")
    shown = "python -P scripts/resources.py" + (f" --test-dir {test_dir}" if test_dir else "")
    lines = [begin, stamp(shown, _load_average()) + ".", "",
             f"The README's install command in a fresh clone, `{command}`: **{seconds:.0f} s** (wall clock).", "",
             "| what it left on disk | size |", "|---|---|"]
    lines += [f"| {what} | {human(n)} |" for what, n in sizes]
    if test_dir:
        lines += ["", f"What `bash scripts/test.sh` had written when this ran:", "",
                  "| where | size |", "|---|---|"]
        checkout = Path(test_dir).resolve().parent  # the checkout the test command ran in
        for place in [test_dir, "rustlib/target", "build", *caches()]:
            path = Path(os.path.expanduser(place))
            path = path if path.is_absolute() else checkout / path
            if path.exists():
                lines.append(f"| `{place}` | {human(disk_usage(path))} |")
        # The temporary directories: the harness gives each pytest run and the fuzz step their own and
        # removes them.
        temporary = [Path(tempfile.gettempdir()) / f"cb3-pytest-{os.getuid()}",
                     Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}", *Path("/dev/shm").glob("cb3-fuzz-*")]
        left = sum(disk_usage(path) for path in temporary)
        lines.append(f"| temporary directories (`{temporary[0]}`, `{temporary[1]}`, `/dev/shm/cb3-fuzz-*`) | "
                     + (human(left) if left else "none left") + " |")
    lines.append(end)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", default=str(PAGE))
    parser.add_argument("--test-dir", help="also measure what the test command wrote (after a full run)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "asv_benchmarks"))
    from tools.pages import replace_section

    command = install_command()
    seconds, sizes = measure_install(command)
    text = section(command, seconds, sizes, args.test_dir)
    page = Path(args.page)
    page.write_text(replace_section(page.read_text(encoding="utf-8"), text, "resources"), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
