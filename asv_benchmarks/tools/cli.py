"""`python asv_benchmarks/measure.py COMMAND ...`: the measuring tools of a
checkout (none of them ship in the wheel).

    compare [--quick] [--sizes 64,1024,...] [--rounds N] [--only WORDS] [--json FILE] [--clock wall|process] [--warmup S]
        cb3 against what a user would pick instead, per call, in one process
        (calls.py); without --quick/--sizes/--only, the file rows too.
    targets PAGE [--quick] [--rounds N] [--clock wall|process]
        the per-call targets into PAGE's section for this machine's CPU
        family (targets.py; docs/results/performance.md).
    files [PAGE] [--file-size 256M] [--sparse-size 2G] [--rounds N] [--dir DIR]
        the file rows (files.py), printed or into PAGE's `files` section
        (docs/results/files.md).
    per-call [--repeat N] [--json]
        timeit-style best and median per call of a few calls (per_call.py).
    pypy-page OUT.md NOTE.txt [--instructions COUNTS.json] RUN.json...
        merges `compare --json` runs of CPython and PyPy into the section of
        this CPU family of OUT.md (pypy_page.py; docs/results/pypy-speed.md).
    instructions workload CASE CALLS | split CASE SHORT.out LONG.out
        where a 64-byte call's instructions go, under callgrind (instructions.py).
    chunked-figures [--label TEXT] [--header]
        the chunked format's hardening figures (chunked_figures.py).
    asv machine|config|smoke|offline|check-page ...
        the asv helpers (asvtool.py).

Every run imports the cb3 that the interpreter has installed; the Rust rows
need the reference binary (reference.py).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Callable

import cb3
from cb3 import _cb3
from cb3.cli.speed import PEERS, missing_peers

from . import files, timing
from .machine import cpu_name, load_average


def _compare(argv: list[str]) -> int:
    from . import calls, reference

    parser = argparse.ArgumentParser(prog="measure.py compare", description=calls.__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few sizes, short loops (a smoke run)")
    parser.add_argument("--sizes", help="comma-separated message sizes in bytes")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per case (default 5; quick: 2)")
    parser.add_argument("--only", help="comma-separated words: run only cases whose name contains one")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    _clock_options(parser)
    _file_options(parser)
    args = parser.parse_args(argv)
    timing.use_clock(args.clock)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (calls.QUICK_SIZES if args.quick else calls.DEFAULT_SIZES)
    rounds = args.rounds or (2 if args.quick else 5)
    budget = 0.005 if args.quick else 0.1
    results = calls.measure(sizes, rounds, budget, args.only.split(",") if args.only else None, args.warmup)
    print(calls.report(results))
    missing = missing_peers()
    if missing:
        print(
            "\nnot installed, so not compared: "
            + "; ".join(f"{dist} ({what})" for _, what, dist in missing)
            + f"\ninstall them with: {sys.executable} -m pip install "
            + " ".join(dist for _, _, dist in missing),
            file=sys.stderr,
        )
    if not reference.available():
        print(f"the Rust rows need the reference binary: {reference.BUILD}", file=sys.stderr)
    if not (args.quick or args.sizes or args.only):
        print()
        files.main(args.file_size, args.sparse_size, min(rounds, 3), args.dir)
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
                    "load_average": load_average(),
                    "missing_peers": [dist for _, _, dist in missing],
                    "clock": args.clock,
                    "warmup": args.warmup,
                    "results": [
                        {
                            "case": r.case,
                            "group": calls.groups.get(r.case, "aead"),
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


def _targets(argv: list[str]) -> int:
    from . import targets

    parser = argparse.ArgumentParser(prog="measure.py targets", description=targets.__doc__.split("\n\n")[0])
    parser.add_argument("page", help="the page whose section of this CPU family is rewritten (or appended)")
    parser.add_argument("--quick", action="store_true", help="one round, short loops (a smoke run)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 7; quick: 1)")
    _clock_options(parser, warmup=False)
    args = parser.parse_args(argv)
    timing.use_clock(args.clock)
    rounds = args.rounds or (1 if args.quick else 7)
    options = (" --quick" if args.quick else "") + (f" --rounds {args.rounds}" if args.rounds else "")
    options += " --clock process" if args.clock == "process" else ""
    return targets.write_targets(args.page, rounds, 0.002 if args.quick else 0.2, options)


def _files(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="measure.py files", description=files.__doc__.split("\n\n")[0])
    parser.add_argument("page", nargs="?", help="rewrite this page's `files` section (else print the rows)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    _file_options(parser)
    args = parser.parse_args(argv)
    if args.page is None:
        return files.main(args.file_size, args.sparse_size, args.rounds, args.dir)
    options = f" --file-size {args.file_size} --rounds {args.rounds} --sparse-size {args.sparse_size}"
    return files.write_files(args.page, args.file_size, args.sparse_size, args.rounds, args.dir, options)


def _clock_options(parser: argparse.ArgumentParser, warmup: bool = True) -> None:
    parser.add_argument(
        "--clock",
        choices=["wall", "process"],
        default="wall",
        help="wall time (default) or the process's CPU time (steadier on a shared machine)",
    )
    if warmup:
        parser.add_argument(
            "--warmup",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="run each case this long before timing it (PyPy: JIT and GC heap in steady state; default 0)",
        )


def _file_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file-size", default="256M", help="file rows: the file size (default 256M)")
    parser.add_argument("--sparse-size", default="2G", help="file rows: the sparse file for peak RSS (default 2G; 0: skip)")
    parser.add_argument("--dir", help="file rows: where the files go (default /dev/shm)")


def _module(name: str) -> Callable[[list[str]], int]:
    def run(argv: list[str]) -> int:
        import importlib

        return importlib.import_module(f"{__package__}.{name}").main(argv)

    return run


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "compare": _compare,
    "targets": _targets,
    "files": _files,
    "per-call": _module("per_call"),
    "pypy-page": _module("pypy_page"),
    "instructions": _module("instructions"),
    "chunked-figures": _module("chunked_figures"),
    "asv": _module("asvtool"),
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(__doc__ + "\nPeers: " + "; ".join(f"{dist} ({what})" for _, what, dist in PEERS) + "; hashlib.")
        if argv and argv[0] not in ("-h", "--help"):
            print(f"measure.py: unknown command {argv[0]!r}", file=sys.stderr)
            return 2
        return 0 if argv else 2
    return COMMANDS[argv[0]](argv[1:])
