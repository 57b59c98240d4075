"""`python -m cb3 bench`: cb3 against what a user would pick instead, measured
side by side in one process.

Every case is timed in interleaved rounds (round 1 of every case and size,
then round 2, ...; each round in a new, seeded random order, so that no case
always follows the same one) and the median per-call time is kept, so a
burst of noise on a shared machine hits all cases alike. Peers that are not installed are
listed at the end, with the pip command that installs them. The raw-Rust
column times the `chacha20-blake3` crate itself through
`cb3._cb3.bench_reference`, in the same process.

    python -m cb3 bench [--quick] [--sizes 64,1024,...] [--rounds N] [--json FILE]
    python -m cb3 bench --targets-markdown docs/results/performance.md [--quick] [--rounds N]
    python -m cb3 bench --files-markdown docs/results/files.md [--file-size 256M] [--rounds N]

`--targets-markdown FILE` measures the per-call targets instead (each a
ratio of two cases timed in the same rounds) and writes them into FILE's
section for the CPU family of this machine, between
`<!-- BEGIN generated: targets cpu=SLUG -->` and
`<!-- END generated: targets cpu=SLUG -->` (SLUG: `calls.cpu_family()`,
e.g. intel-xeon-avx-512, amd-epyc-avx2): a heading with the family's name and a table
stamped with the date, the CPU model, its cache sizes, the cores, the load
before and after the run, the interpreter, cb3's version and SIMD backend.
Only that section is rewritten; the other families' are left byte for byte,
and a family without a section yet gets one after the last family's (before
any text that follows it). FILE must hold at least one family's section.
`--files-markdown FILE` does the same for the file rows, in one section
(`files`, e.g. in docs/results/files.md).
"""

import argparse
import json
import platform
import sys
import time

import cb3
from cb3 import _cb3

from . import calls
from .calls import DEFAULT_SIZES, PEERS, QUICK_SIZES, cpu_family, cpu_name, groups, load_average, measure, missing_peers, report
from .targets import BEGIN_FILES, END_FILES, targets_markers, write_files, write_targets


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="few sizes, short loops (a smoke run)")
    parser.add_argument("--sizes", help="comma-separated message sizes in bytes")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per case (default 5; quick: 2)")
    parser.add_argument("--only", help="comma-separated words: run only cases whose name contains one")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--targets-markdown",
        metavar="FILE",
        help="measure the per-call targets (cb3 against its peers) and rewrite the generated section of FILE "
        f"for this machine's CPU family ({' ... '.join(targets_markers(cpu_family().slug))}; "
        "a family not in FILE yet is appended after the others), e.g. docs/results/performance.md",
    )
    parser.add_argument("--files", action="store_true", help="only the file rows (cb3/bench/files.py)")
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
    """Registers ``python -m cb3 bench`` (see cb3/cli/__init__.py)."""
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
    calls.clock = time.process_time if args.clock == "process" else time.perf_counter
    calls.clock_name = "process CPU" if args.clock == "process" else "wall"
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
        from . import files as bench_files

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
        from . import files as bench_files

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
                    "load_average": load_average(),
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
