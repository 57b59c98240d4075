"""cb3's command line (``python -m cb3``, cb3/__main__.py).

Each command lives in its own module, which registers itself with a function
``add_parser(subparsers)`` that adds a subparser and sets ``func`` (called
with the parsed arguments, returns the exit status) with
``set_defaults(func=...)``. To add a command, add its ``add_parser`` to
:data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable, Sequence

import cb3
from cb3 import _cb3, capi

from . import common, files, selftest, speed

EXIT_CODES = """\
exit status:
  0  success
  1  failure: a known-answer test failed, b3sum found a mismatch or could not
     read a file, or the reader of the output went away (e.g. `| head`)
  2  usage error (unknown command or option, bad value)
  encrypt/decrypt: 1 invalid or tampered stream, wrong key or passphrase, a passphrase header
     above the limits, 3 I/O error, 130 interrupted,
     143 SIGTERM, 129 SIGHUP (no partial output is left behind)

examples:
  python -m cb3                       self-check (the same as `python -m cb3 selftest`)
  python -m cb3 speed                 a few seconds of speed next to the installed peers
  python -m cb3 b3sum FILE...         BLAKE3 checksums, like b3sum
  python -m cb3 keygen -o K           a new key file (mode 0600) for --key-file
  python -m cb3 encrypt --key-file K -o big.cb3 big.iso    a file of any size (decrypt: the same)
  python -m cb3 encrypt --passphrase -o notes.cb3 notes   under a passphrase, asked twice (decrypt: once)
  cc app.c $(python -m cb3 --cflags --libs)
"""


def _add_b3sum_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """``python -m cb3 b3sum ...``: every argument after the word ``b3sum`` goes
    unparsed to cb3/cli/b3sum.py (its own parser, its own ``--help``)."""
    parser = subparsers.add_parser(
        "b3sum",
        help="print or check BLAKE3 checksums, like b3sum (python -m cb3 b3sum --help)",
        add_help=False,
        prefix_chars="\0",  # no option of its own: "--check", "-h" and "--" all reach b3sum
    )
    parser.add_argument("b3sum_args", nargs=argparse.REMAINDER)

    def run(args: argparse.Namespace) -> int:
        from . import b3sum

        return b3sum.main(args.b3sum_args)

    parser.set_defaults(func=run)
    return parser


#: Every subcommand's ``add_parser(subparsers)``, in the order of ``--help``.
COMMANDS: list[Callable[..., object]] = [
    selftest.add_parser,
    speed.add_parser,
    _add_b3sum_parser,
    files.add_parser,
    capi.add_parser,
]


def version() -> str:
    return (
        f"cb3 {cb3.__version__} (rustlib {_cb3.version()}, HPy ABI {cb3.HPY_ABI}, "
        f"{platform.python_implementation()} {platform.python_version()})"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cb3",
        description="cb3: ChaCha20-BLAKE3 authenticated encryption and BLAKE3 hashing. "
        "Without a command, runs `selftest`.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=version())
    capi.add_flags(parser.add_argument_group("C API flags (the same as `python -m cb3 config ...`)"))
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    for add_parser in COMMANDS:
        add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``python -m cb3`` with ``argv`` (default ``sys.argv[1:]``);
    returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        if args.capi_flags and args.command not in (None, "config"):
            parser.error(f"the C API flags go alone or after `config`, not with `{args.command}`")
    except SystemExit as e:  # --help, --version (0) and usage errors (2)
        return e.code if isinstance(e.code, int) else 2
    try:
        status: int | None
        if args.command is not None:
            status = args.func(args)
        elif args.capi_flags:
            status = capi.main_flags(args.capi_flags)
        else:
            status = selftest.command(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return 0 if status is None else status
    except BrokenPipeError:
        return common.stdout_went_away()
