"""cb3's C API for other extension modules and C programs.

The installed package ships the header ``include/cb3.h``, the static library
``lib/libcb3.a`` (the Rust core, which C code can link directly) and the
pkg-config file ``lib/pkgconfig/cb3.pc``. A setuptools extension links it
like this (see docs/c-api.md and examples/downstream/)::

    import cb3
    from setuptools import Extension

    Extension(
        "mymodule",
        ["mymodule.c"],
        include_dirs=[cb3.get_include()],
        library_dirs=[cb3.get_library_dir()],
        libraries=cb3.get_libraries(),
        extra_link_args=cb3.get_link_args(),
    )

Build scripts that are not Python use ``python -m cb3 --cflags --libs``
(:func:`main_flags`) or pkg-config with
``PKG_CONFIG_PATH=$(python -m cb3 --pkgconfigdir)``.

This module imports nothing from the extension, so setup.py can load it by
path (for :data:`NATIVE_STATIC_LIBS` and :func:`pkgconfig_text`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

__all__ = [
    "get_cflags",
    "get_include",
    "get_libraries",
    "get_library_dir",
    "get_libs",
    "get_link_args",
    "get_pkgconfig_dir",
    "main_flags",
    "add_flags",
    "add_parser",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

#: The system libraries that a Rust static library needs on Linux, in
#: cargo's order (``cargo rustc --crate-type staticlib -- --print
#: native-static-libs``); tests/api/test_c_api.py checks the list against rustc.
NATIVE_STATIC_LIBS = ("gcc_s", "util", "rt", "pthread", "m", "dl", "c")


def get_include() -> str:
    """The directory that holds ``cb3.h`` (for ``include_dirs`` / ``-I``)."""
    return os.path.join(_PACKAGE_DIR, "include")


def get_library_dir() -> str:
    """The directory that holds the static library ``libcb3.a`` (for
    ``library_dirs`` / ``-L``)."""
    return os.path.join(_PACKAGE_DIR, "lib")


def get_libraries() -> list[str]:
    """The libraries to link, by name (for ``libraries`` / ``-l``):
    ``["cb3"]``, which the linker finds as ``libcb3.a`` in
    :func:`get_library_dir`."""
    return ["cb3"]


def get_link_args() -> list[str]:
    """The linker flags for the system libraries that the Rust static
    library needs (for ``extra_link_args``; they must come after
    ``-lcb3``, which setuptools ensures)."""
    return [f"-l{name}" for name in NATIVE_STATIC_LIBS]


def get_pkgconfig_dir() -> str:
    """The directory that holds ``cb3.pc`` (for ``PKG_CONFIG_PATH``)."""
    return os.path.join(get_library_dir(), "pkgconfig")


def get_cflags() -> list[str]:
    """Compiler flags for code that includes ``cb3.h``."""
    return [f"-I{get_include()}"]


def get_libs() -> list[str]:
    """Linker flags for code that calls cb3: the library and what it needs."""
    return [f"-L{get_library_dir()}", *(f"-l{name}" for name in get_libraries()), *get_link_args()]


def pkgconfig_text(version: str) -> str:
    """The contents of ``cb3.pc`` for cb3 ``version``. Paths are relative to
    the file itself (``${pcfiledir}``), so the installed package can move."""
    libs = " ".join(f"-l{name}" for name in (*get_libraries(), *NATIVE_STATIC_LIBS))
    return (
        "# cb3's C API: cb3.h and the static library libcb3.a, installed with the\n"
        "# cb3 Python package. PKG_CONFIG_PATH=$(python -m cb3 --pkgconfigdir)\n"
        "prefix=${pcfiledir}/../..\n"
        "includedir=${prefix}/include\n"
        "libdir=${prefix}/lib\n"
        "\n"
        "Name: cb3\n"
        "Description: ChaCha20-BLAKE3 committing AEAD (C API of the cb3 Python package)\n"
        f"Version: {version}\n"
        "Cflags: -I${includedir}\n"
        # Static only, so the system libraries belong in Libs, not Libs.private.
        f"Libs: -L${{libdir}} {libs}\n"
    )


# `python -m cb3` flags: each prints one answer on stdout.
_FLAGS: dict[str, Callable[[], str]] = {
    "--cflags": lambda: " ".join(get_cflags()),
    "--libs": lambda: " ".join(get_libs()),
    "--includedir": get_include,
    "--libdir": get_library_dir,
    "--pkgconfigdir": get_pkgconfig_dir,
}

#: Help text for the flags :func:`main_flags` handles (``python -m cb3 --help``).
_FLAG_HELP = {
    "--cflags": "compiler flags: -I<dir of cb3.h>",
    "--libs": "linker flags: -L<dir of libcb3.a> -lcb3 and the system libraries it needs",
    "--includedir": "the directory of cb3.h",
    "--libdir": "the directory of libcb3.a",
    "--pkgconfigdir": "the directory of cb3.pc (for PKG_CONFIG_PATH)",
}


def add_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Adds the C-API flags to ``parser``: each appends its name to
    ``args.capi_flags``, in the order given (the order of the output)."""
    for flag, text in _FLAG_HELP.items():
        parser.add_argument(flag, action="append_const", const=flag, dest="capi_flags", help=text)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Registers ``python -m cb3 config`` (see cb3/cli/__init__.py). The same flags
    also work without the word ``config``: ``python -m cb3 --cflags --libs``."""
    parser = subparsers.add_parser(
        "config",
        help="compiler and linker flags for C code that uses cb3.h and libcb3.a",
        description="Print what a C build needs to use cb3's C API (docs/c-api.md): --cflags and --libs "
        "share one line, as with pkg-config; each directory gets a line of its own.",
    )
    add_flags(parser)
    parser.set_defaults(func=_config_command)
    return parser


def _config_command(args: argparse.Namespace) -> int:
    flags = getattr(args, "capi_flags", None) or ["--cflags", "--libs"]
    status = main_flags(flags)
    assert status is not None
    return status


def main_flags(argv: Sequence[str], stdout: TextIO | None = None) -> int | None:
    """Handles the C-API flags of ``python -m cb3``.

    ``argv`` is the argument list without the program name
    (``sys.argv[1:]``). If it is non-empty and every argument is one of
    ``--cflags``, ``--libs``, ``--includedir``, ``--libdir`` and
    ``--pkgconfigdir``, prints the answers and returns the exit status 0:
    ``--cflags`` and ``--libs`` together share one line, as with
    pkg-config, and each directory gets a line of its own. Otherwise prints
    nothing and returns None, so that ``cb3/cli/__init__.py`` can go on with
    its own arguments::

        status = cb3.capi.main_flags(sys.argv[1:])
        if status is not None:
            sys.exit(status)
    """
    args = list(argv)
    if not args or any(arg not in _FLAGS for arg in args):
        return None
    out = sys.stdout if stdout is None else stdout
    flags = [_FLAGS[arg]() for arg in args if arg in ("--cflags", "--libs")]
    lines = [" ".join(flags)] if flags else []
    lines += [_FLAGS[arg]() for arg in args if arg not in ("--cflags", "--libs")]
    for line in lines:
        print(line, file=out)
    return 0
