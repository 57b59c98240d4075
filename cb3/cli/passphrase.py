"""Passphrases for ``python -m cb3`` (docs/passphrase-format.md): where
they come from, the options that ask for a stronger derivation or allow a
costlier one, and the words for what goes wrong.

A passphrase never comes from the command line itself (other users see it
in the process list, and it lands in shell history): it is typed at the
terminal without echo (twice when it protects something new), or, for
scripts, read from ``--passphrase-file PATH``, ``--passphrase-fd N`` or
``--passphrase-env NAME``. From a file or a descriptor one trailing newline
(``\\n`` or ``\\r\\n``) is removed, as ``echo secret > file`` adds one;
nothing else is. A passphrase must be non-empty UTF-8 text; the library
normalises it to NFC.
"""

from __future__ import annotations

import argparse
import getpass
import os
import stat
from typing import Any

from cb3.errors import PassphraseLimitError
from cb3.kdf import (
    DEFAULT_MEMORY_COST,
    DEFAULT_PARALLELISM,
    DEFAULT_TIME_COST,
    MAX_MEMORY_COST,
    MAX_PARALLELISM,
    MAX_TIME_COST,
)


class PassphraseUsageError(Exception):
    """No usable passphrase: the message says why (a usage error, exit 2)."""


#: A passphrase file or descriptor holding more than this is not a passphrase.
MAX_PASSPHRASE_BYTES = 64 * 1024

#: The option that raises each reader limit, by the parameter it bounds.
LIMIT_OPTIONS = {"time_cost": "--max-passes", "memory_cost": "--max-memory", "parallelism": "--max-lanes"}


def memory_size(text: str) -> int:
    """--memory/--max-memory: KiB, or a number with K, M or G (KiB, MiB, GiB)."""
    scale = {"K": 1, "M": 1024, "G": 1024 * 1024}
    number = text.strip().upper().removesuffix("IB").removesuffix("B")
    factor = scale.get(number[-1:], 0)
    try:
        value = int(number[:-1] if factor else number) * (factor or 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KiB or a size such as 64M or 2G, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def add_source_options(parser: argparse.ArgumentParser, prefix: str = "passphrase", what: str = "the passphrase",
                       prompt_help: str | None = None) -> None:
    """--PREFIX (ask at the terminal), --PREFIX-file, --PREFIX-fd, --PREFIX-env: one at most."""
    group = parser.add_mutually_exclusive_group()
    if prompt_help is not None:
        group.add_argument(f"--{prefix}", action="store_true", help=prompt_help)
    group.add_argument(f"--{prefix}-file", metavar="PATH",
                       help=f"read {what} from a file (one trailing newline removed)")
    group.add_argument(f"--{prefix}-fd", metavar="N", type=int,
                       help=f"read {what} from file descriptor N to its end (one trailing newline removed)")
    group.add_argument(f"--{prefix}-env", metavar="NAME", help=f"take {what} from environment variable NAME")


def add_cost_options(parser: argparse.ArgumentParser) -> None:
    """--passes, --memory, --lanes: a stronger derivation than the defaults."""
    group = parser.add_argument_group("passphrase derivation (Argon2id; the defaults are RFC 9106's second option)")
    group.add_argument("--passes", type=positive, default=DEFAULT_TIME_COST, metavar="N",
                       help=f"Argon2id passes (default {DEFAULT_TIME_COST})")
    group.add_argument("--memory", type=memory_size, default=DEFAULT_MEMORY_COST, metavar="SIZE",
                       help=f"Argon2id memory, KiB or with K/M/G (default {DEFAULT_MEMORY_COST // 1024}M)")
    group.add_argument("--lanes", type=positive, default=DEFAULT_PARALLELISM, metavar="N",
                       help=f"Argon2id lanes (default {DEFAULT_PARALLELISM})")


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """--max-passes, --max-memory, --max-lanes: what a reader accepts."""
    group = parser.add_argument_group("passphrase limits (a header asking for more is refused before any allocation)")
    group.add_argument("--max-passes", type=positive, default=MAX_TIME_COST, metavar="N",
                       help=f"most Argon2id passes accepted (default {MAX_TIME_COST})")
    group.add_argument("--max-memory", type=memory_size, default=MAX_MEMORY_COST, metavar="SIZE",
                       help=f"most Argon2id memory accepted, KiB or with K/M/G (default {MAX_MEMORY_COST // 1024**2}G)")
    group.add_argument("--max-lanes", type=positive, default=MAX_PARALLELISM, metavar="N",
                       help=f"most Argon2id lanes accepted (default {MAX_PARALLELISM})")


def costs(args: argparse.Namespace) -> dict[str, int]:
    """The derivation's parameters as the library's keywords."""
    return {"time_cost": args.passes, "memory_cost": args.memory, "parallelism": args.lanes}


def limits(args: argparse.Namespace) -> dict[str, int]:
    """The reader's limits as the library's keywords."""
    return {"max_time_cost": args.max_passes, "max_memory_cost": args.max_memory,
            "max_parallelism": args.max_lanes}


def limit_message(error: PassphraseLimitError) -> str:
    """The library's limit error in the command line's words."""
    if error.parameter is None:
        return str(error)
    unit = " KiB" if error.parameter == "memory_cost" else ""
    option = LIMIT_OPTIONS.get(error.parameter, "--max-" + error.parameter)
    return (f"the passphrase header asks for {error.parameter} {error.value}{unit}, above the limit of "
            f"{error.limit}{unit}: use {option} {error.value} to allow it (for a file you trust)")


def given(args: argparse.Namespace, prefix: str = "passphrase") -> bool:
    """Whether a source of this passphrase was named (the prompt flag included)."""
    name = prefix.replace("-", "_")
    return bool(getattr(args, name, False)) or any(
        getattr(args, f"{name}_{kind}", None) is not None for kind in ("file", "fd", "env"))


def read(args: argparse.Namespace, *, confirm: bool, prefix: str = "passphrase", label: str = "Passphrase",
         stdin_is_input: bool = False) -> str:
    """The passphrase from the source the options name, else from the
    terminal (typed twice with `confirm`)."""
    name = prefix.replace("-", "_")
    path, fd, env = (getattr(args, f"{name}_{kind}", None) for kind in ("file", "fd", "env"))
    if path is not None:
        return _text(_read_file(path, f"--{prefix}-file"), f"--{prefix}-file {path}", strip=True)
    if fd is not None:
        if fd == 0 and stdin_is_input:
            raise PassphraseUsageError(f"--{prefix}-fd 0 is stdin, which is the input: use another descriptor")
        return _text(_read_fd(fd, f"--{prefix}-fd"), f"--{prefix}-fd {fd}", strip=True)
    if env is not None:
        value = os.environb.get(os.fsencode(env)) if os.supports_bytes_environ else _environ_bytes(env)
        if value is None:
            raise PassphraseUsageError(f"environment variable {env} is not set (--{prefix}-env)")
        return _text(value, f"environment variable {env}", strip=False)
    return prompt(label, confirm=confirm, hint=f"--{prefix}-file, --{prefix}-fd or --{prefix}-env")


def _environ_bytes(name: str) -> bytes | None:
    value = os.environ.get(name)
    return None if value is None else value.encode("utf-8", "surrogateescape")


def _read_file(path: str, option: str) -> bytes:
    try:
        with open(path, "rb") as f:
            if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):
                raise IsADirectoryError(21, "Is a directory", path)
            data = f.read(MAX_PASSPHRASE_BYTES + 1)
    except OSError as error:
        raise PassphraseUsageError(f"cannot read {option} {path}: {error.strerror or error}") from None
    if len(data) > MAX_PASSPHRASE_BYTES:
        raise PassphraseUsageError(f"{option} {path} holds more than {MAX_PASSPHRASE_BYTES} bytes: not a passphrase")
    return data


def _read_fd(fd: int, option: str) -> bytes:
    chunks, total = [], 0
    try:
        while True:
            piece = os.read(fd, 4096)
            if not piece:
                break
            chunks.append(piece)
            total += len(piece)
            if total > MAX_PASSPHRASE_BYTES:
                raise PassphraseUsageError(f"{option} {fd} gives more than {MAX_PASSPHRASE_BYTES} bytes: "
                                           "not a passphrase")
    except OSError as error:
        raise PassphraseUsageError(f"cannot read {option} {fd}: {error.strerror or error}") from None
    return b"".join(chunks)


def _text(data: bytes, source: str, *, strip: bool) -> str:
    """UTF-8 text without one trailing newline (from a file or descriptor); empty refused."""
    if strip:
        data = data[:-2] if data.endswith(b"\r\n") else data[:-1] if data.endswith(b"\n") else data
    if not data:
        raise PassphraseUsageError(f"the passphrase from {source} is empty")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PassphraseUsageError(f"the passphrase from {source} is not UTF-8 text (byte {error.start})") from None


def prompt(label: str, *, confirm: bool, hint: str = "--passphrase-file, --passphrase-fd or --passphrase-env") -> str:
    """Asks at the controlling terminal without echo (never from stdin,
    which may be the data); twice with `confirm`."""
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | getattr(os, "O_NOCTTY", 0)))
    except OSError:  # getpass would fall back to stdin, which may be the data
        raise PassphraseUsageError(f"no terminal to ask for the passphrase on: use {hint}") from None
    try:
        first = getpass.getpass(f"{label}: ")
        if not first:
            raise PassphraseUsageError("empty passphrase refused")
        if confirm and getpass.getpass(f"{label} (again): ") != first:
            raise PassphraseUsageError("the two passphrases differ")
    except EOFError:  # Ctrl-D at the prompt
        raise PassphraseUsageError("no passphrase given") from None
    return first

