"""`python -m cb3 encrypt` / `decrypt` / `keygen` / `passwd`: files of any
size in cb3's chunked stream format (cb3/chunked/, docs/stream-format.md),
under a key or a passphrase (docs/passphrase-format.md).

    python -m cb3 keygen -o KEY                      [--passphrase: a passphrase-protected key file]
    python -m cb3 encrypt --key-file KEY [-o OUT] [IN]
    python -m cb3 decrypt --key-env CB3_KEY [-o OUT] [IN]
    python -m cb3 encrypt --passphrase [-o OUT] [IN]  (decrypt: no key option; the passphrase is asked once)
    python -m cb3 passwd KEY                         (a new passphrase for a passphrase-protected key file)
    python -m cb3 encrypt --key-file KEY -O DIR IN...  (several files; the key, and its derivation, once)

The key comes from a file (32 raw bytes, or 64 hex digits) or an
environment variable (64 hex digits), never from the command line, where
other users could read it in the process list. A key file readable by group
or others is used with a warning (as ssh warns); a 32-byte key file that is
text (hex digits, a passphrase) is refused: it is not 32 random bytes.
`keygen` writes a new random key as 64 hex digits to a new file of mode 0600
(never over an existing one); with a passphrase, as a passphrase-protected
key file (the header of docs/passphrase-format.md), which `--key-file`
unlocks with one derivation. Passphrases come from the terminal or the
`--passphrase-file/-fd/-env` options (cb3/cli/passphrase.py), never from
the command line.

IN and OUT default to `-` (stdin, stdout). A file output is written to a
temporary file in its directory and renamed over OUT (after fsync) only when
the whole input was processed, and for decrypt only when every chunk
verified; it is created with mode 0600 whatever the input's mode (an
encrypted file or a plaintext is nobody else's to read: chmod it after if
it should be): on any failure (SIGINT, SIGTERM and SIGHUP included) no output is
left and an existing OUT is untouched. OUT a symlink: the file it points to
is replaced, the link stays (as cp does). OUT a device or FIFO: written in
place, as stdout is. Decrypting to stdout (or a device or FIFO) writes each
chunk's plaintext once it verified, so on failure it has received the
verified part of the stream (the exit status says it is incomplete). IN and
OUT may not be the same file.

Exit status: 0 success; 1 the input is not a valid stream for this key
(authentication failed, truncated, not a cb3 stream, a wrong passphrase, a
passphrase header above the limits); 2 usage error (bad arguments or key, no
usable passphrase, output exists without --force, ciphertext to a terminal);
3 I/O error (cannot read the input or write the output, disk full);
130 interrupted (SIGINT); 128 + N killed by signal N (SIGTERM 143, SIGHUP 129).

`add_parser(subparsers)` registers the commands on an argparse
subparsers object (func=run, returning the exit status); `main(argv)` runs
them on their own.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import stat
import string
import sys
import threading
from contextlib import contextmanager
from typing import IO, Any, Callable, Iterator, Sequence

import cb3
from cb3 import _cb3
from cb3.chunked import CHUNKED_CHUNK_SIZE
from cb3.chunked.files import same_file
from cb3.chunked.format import encode_header
from cb3.chunked.passphrase import MAGIC, is_passphrase_file

from . import passphrase as secrets
from .common import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_IO, EXIT_OK, EXIT_USAGE, Progress

EXIT_INVALID = EXIT_FAILURE  # the input is not a valid stream for this key

#: The first bytes of a stream under a key (a passphrase file starts with cb3.chunked.passphrase.MAGIC).
CHUNKED_MAGIC = b"CB3STRM"

#: Inputs at least this large show a progress bar when stderr is a terminal.
PROGRESS_MIN_SIZE = 64 * 1024 * 1024


class UsageError(Exception):
    pass


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like KeyboardInterrupt, so that the
    temporary output is removed on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: The signals that end a command by unwinding it (SIGINT is KeyboardInterrupt).
TERMINATING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextmanager
def _signals_unwind() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Terminated in the main thread for the duration
    (signals that are ignored, e.g. under nohup, stay ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def unwind(signum: int, frame: object) -> None:
        raise Terminated(signum)

    previous = {}
    for signum in TERMINATING_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, unwind)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _threads(text: str) -> int:
    """--threads: a number or 'auto', as the Rust core's thread budget takes it."""
    try:
        value = cb3.AUTO if text == "auto" else int(text)
        _cb3.thread_count(value)  # the rule's owner refuses what it cannot use
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'auto', got {text!r}") from None
    return value


def _chunk_size(text: str) -> int:
    """--chunk-size: a number the header codec accepts (it owns the range)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    try:
        encode_header(value, bytes(_cb3.CHUNKED_PREFIX_SIZE))
    except (ValueError, OverflowError) as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("chunk_size ")) from None
    return value


class _RefuseKeyArgument(argparse.Action):
    """--key VALUE: refused with an explanation (a key on the command line is
    visible to every user in the process list and lands in shell history)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.error("keys are never read from the command line (other users can see it): use --key-file or --key-env")


def add_parser(subparsers: Any) -> None:
    """Registers `encrypt`, `decrypt` and `keygen` on an argparse subparsers object."""
    for name in ("encrypt", "decrypt"):
        verb = "Encrypt" if name == "encrypt" else "Decrypt and verify"
        parser = subparsers.add_parser(
            name,
            allow_abbrev=False,
            help=f"{verb} a file of any size (cb3 chunked stream format)",
            description=f"{verb} a file or pipe in cb3's chunked stream format (docs/stream-format.md), under a key "
            "or a passphrase (docs/passphrase-format.md). Exit status: 0 ok, 1 invalid or tampered stream / wrong "
            "key or passphrase / a passphrase header above the limits, 2 usage, 3 I/O error, 130 interrupted.",
        )
        parser.add_argument("input", nargs="*", default=["-"],
                            help="input file, or - for stdin (default); several with --output-dir")
        parser.add_argument("-o", "--output", default="-",
                            help="output file (created with mode 0600, as the key files are), or - for stdout (default)")
        parser.add_argument(
            "-O", "--output-dir", metavar="DIR",
            help="write each input's output into DIR, named after it (encrypt adds .cb3, decrypt removes it): "
            "the key (a passphrase-protected key file: one derivation) and the passphrase are read once",
        )
        keys = parser.add_mutually_exclusive_group()
        keys.add_argument(
            "--key-file", metavar="PATH",
            help="file holding the key: 32 raw bytes, 64 hex digits, or a passphrase-protected key file "
            "(its passphrase asked once, or from --passphrase-file/-fd/-env) (make one with `python -m cb3 keygen`)",
        )
        keys.add_argument("--key-env", metavar="NAME", help="environment variable holding the key as 64 hex digits")
        parser.add_argument("--key", action=_RefuseKeyArgument, nargs="?", help=argparse.SUPPRESS)
        secrets.add_source_options(
            parser,
            prompt_help="encrypt under a passphrase, typed twice at the terminal (docs/passphrase-format.md)"
            if name == "encrypt" else "ask for the passphrase at the terminal (the default without a key option)",
        )
        parser.add_argument(
            "--associated-data",
            metavar="TEXT",
            help="associated data (UTF-8) bound to every chunk; decrypt must be given the same",
        )
        if name == "encrypt":
            secrets.add_cost_options(parser)
        secrets.add_limit_options(parser)
        if name == "encrypt":
            parser.add_argument(
                "--chunk-size",
                type=_chunk_size,
                default=CHUNKED_CHUNK_SIZE,
                help=f"plaintext bytes per chunk (default {CHUNKED_CHUNK_SIZE})",
            )
        parser.add_argument(
            "--threads",
            type=_threads,
            default=cb3.AUTO,
            metavar="N",
            help="threads to seal or open each batch on: a number or 'auto' (default: auto, every usable core)",
        )
        parser.add_argument(
            "--progress",
            choices=("auto", "always", "never"),
            default="auto",
            help="progress bar on stderr: auto = for inputs of 64 MiB or more when stderr is a terminal",
        )
        parser.add_argument(
            "-f",
            "--force",
            action="store_true",
            help="overwrite an existing output file (a symlink's target; a device or FIFO is written in place)"
            + ("; write ciphertext to a terminal" if name == "encrypt" else ""),
        )
        parser.set_defaults(func=run, command=name)
    keygen = subparsers.add_parser(
        "keygen",
        allow_abbrev=False,
        help="write a new random key file (mode 0600) for encrypt/decrypt --key-file",
        description="Write a new random 32-byte key, as 64 hex digits and a newline, to a new file of mode 0600 "
        "(never over an existing file); with a passphrase, as a passphrase-protected key file "
        "(docs/passphrase-format.md) that --key-file unlocks with one derivation. "
        "Exit status: 0 ok, 2 usage (the file exists, no usable passphrase), 3 I/O error.",
    )
    keygen.add_argument("-o", "--output", required=True, metavar="FILE", help="the key file to create")
    secrets.add_source_options(keygen, prompt_help="protect the key with a passphrase, typed twice at the terminal")
    secrets.add_cost_options(keygen)
    keygen.set_defaults(func=run_keygen, command="keygen")
    passwd = subparsers.add_parser(
        "passwd",
        allow_abbrev=False,
        help="change the passphrase of a passphrase-protected key file (the key stays the same)",
        description="Rewrap the key of a passphrase-protected key file under a new passphrase (a new salt, "
        "the given parameters), replacing the file atomically. The files the key encrypted are untouched and "
        "still decrypt. Exit status: 0 ok, 1 wrong passphrase or not a key file, 2 usage, 3 I/O error.",
    )
    passwd.add_argument("key_file", metavar="KEYFILE", help="the passphrase-protected key file")
    secrets.add_source_options(passwd, what="the current passphrase")
    secrets.add_source_options(passwd, prefix="new-passphrase", what="the new passphrase")
    secrets.add_cost_options(passwd)
    secrets.add_limit_options(passwd)
    passwd.set_defaults(func=run_passwd, command="passwd")


def run_keygen(args: argparse.Namespace) -> int:
    """`python -m cb3 keygen -o FILE`: a new key file, mode 0600, never over an existing one."""
    if secrets.given(args):
        return _guarded(args, _keygen_passphrase)
    try:
        fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        print(f"cb3 keygen: {args.output} exists (remove it first: a key file is never overwritten)", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"cb3 keygen: {args.output}: {error.strerror or error}", file=sys.stderr)
        return EXIT_IO
    try:
        with open(fd, "wb") as f:
            f.write(cb3.ChaCha20Blake3.generate_key().hex().encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
    except OSError as error:
        os.unlink(args.output)
        print(f"cb3 keygen: {args.output}: {error.strerror or error}", file=sys.stderr)
        return EXIT_IO
    return EXIT_OK


def _keygen_passphrase(args: argparse.Namespace) -> int:
    """keygen with a passphrase: the key wrapped in a passphrase header (cb3.write_key_file)."""
    if os.path.lexists(args.output):  # before asking for a passphrase
        raise FileExistsError(errno.EEXIST, "exists (remove it first: a key file is never overwritten)", args.output)
    passphrase = secrets.read(args, confirm=True)
    key = bytearray(cb3.generate_key())
    try:
        cb3.write_key_file(args.output, key, passphrase, time_cost=args.passes, memory_cost=args.memory,
                           parallelism=args.lanes)
    finally:
        key[:] = bytes(len(key))
    return EXIT_OK


def run_passwd(args: argparse.Namespace) -> int:
    """`python -m cb3 passwd KEYFILE`: the same key under a new passphrase."""
    return _guarded(args, _passwd)


def _passwd(args: argparse.Namespace) -> int:
    current = secrets.read(args, confirm=False, label=f"Current passphrase for {args.key_file}")
    key = _unlock(args.key_file, current, args)
    try:
        new = secrets.read(args, confirm=True, prefix="new-passphrase", label="New passphrase")
        cb3.write_key_file(args.key_file, key, new, time_cost=args.passes, memory_cost=args.memory,
                           parallelism=args.lanes, overwrite=True)
    finally:
        key[:] = bytes(len(key))
    return EXIT_OK


def _unlock(path: str, passphrase: str, args: argparse.Namespace) -> bytearray:
    """A passphrase-protected key file's key; its failures in the command line's words."""
    try:
        return cb3.unlock_key_file(path, passphrase, **secrets.limits(args))
    except cb3.WrongPassphrase:
        raise cb3.WrongPassphrase(f"key file {path}: wrong passphrase, or a modified key file") from None


def _guarded(args: argparse.Namespace, body: Callable[[argparse.Namespace], int]) -> int:
    """Runs a key file command: its errors as exit statuses and messages."""
    command = args.command
    try:
        return body(args)
    except (UsageError, secrets.PassphraseUsageError, FileExistsError) as error:
        print(f"cb3 {command}: {_describe(error)}", file=sys.stderr)
        return EXIT_USAGE
    except cb3.PassphraseLimitError as error:
        print(f"cb3 {command}: {secrets.limit_message(error)}", file=sys.stderr)
        return EXIT_INVALID
    except cb3.DecryptionError as error:  # a wrong passphrase, not a key file
        print(f"cb3 {command}: {error}", file=sys.stderr)
        return EXIT_INVALID
    except ValueError as error:  # parameters the derivation refuses
        print(f"cb3 {command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"cb3 {command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as error:
        print(f"cb3 {command}: {_describe(error)}", file=sys.stderr)
        return EXIT_IO


def _describe(error: BaseException) -> str:
    if isinstance(error, OSError):
        name = f"{error.filename}: " if error.filename else ""
        return f"{name}{error.strerror or error}"
    return str(error)


#: What a 32-byte key file must not be: text (hex digits or a passphrase and
#: its newline), which has far fewer than 256 bits of entropy.
_TEXT_BYTES = frozenset(string.printable.encode())


def _warn_if_readable_by_others(path: str, command: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) and mode & 0o077:
        print(
            f"cb3 {command}: warning: key file {path} is readable or writable by other users "
            f"(mode {stat.S_IMODE(mode):04o}); restrict it with: chmod 600 {path}",
            file=sys.stderr,
        )


def _key(args: argparse.Namespace) -> bytes | bytearray | None:
    """The key the options name (a passphrase-protected key file unlocked);
    None when there is none: a passphrase then protects the file itself."""
    if args.key_file is None and args.key_env is None:
        return None
    if args.key_file is not None:
        try:
            with open(args.key_file, "rb") as f:
                raw = f.read(1024)
        except OSError as error:
            raise UsageError(f"cannot read key file {args.key_file}: {error.strerror or error}") from None
        _warn_if_readable_by_others(args.key_file, args.command)
        if is_passphrase_file(raw):  # one derivation, then the key for this file
            passphrase = secrets.read(args, confirm=False, label=f"Passphrase for {args.key_file}",
                                      stdin_is_input=args.input == "-")
            return _unlock(args.key_file, passphrase, args)
        if secrets.given(args):
            raise UsageError(f"key file {args.key_file} is not passphrase-protected: the --passphrase options "
                             "go with a passphrase-protected key file, or alone")
        if len(raw) == cb3.KEY_SIZE:
            if all(byte in _TEXT_BYTES for byte in raw):
                raise UsageError(
                    f"key file {args.key_file} holds 32 bytes of text (hex digits or a passphrase), not a key: "
                    f"a key file holds {cb3.KEY_SIZE} raw bytes or 64 hex digits (python -m cb3 keygen -o FILE)"
                )
            return raw
        text, source = raw.strip(), f"key file {args.key_file}"
    else:
        if secrets.given(args):
            raise UsageError("--key-env and the --passphrase options exclude each other")
        value = os.environ.get(args.key_env)
        if value is None:
            raise UsageError(f"environment variable {args.key_env} is not set")
        text, source = value.strip().encode(), f"environment variable {args.key_env}"
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != cb3.KEY_SIZE:
        raise UsageError(f"{source} must hold a {cb3.KEY_SIZE}-byte key: {cb3.KEY_SIZE} raw bytes or 64 hex digits")
    return key


def _input_size(source: IO[bytes]) -> int | None:
    try:
        info = os.fstat(source.fileno())
    except (OSError, AttributeError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _progress(args: argparse.Namespace, name: str, size: int | None) -> tuple[Callable[[int], None] | None, Any]:
    if size is None or args.progress == "never":
        return None, None
    if args.progress == "auto" and (size < PROGRESS_MIN_SIZE or not sys.stderr.isatty()):
        return None, None
    bar = Progress(name, size)
    return bar.update, bar


def run(args: argparse.Namespace) -> int:
    """Runs `encrypt` or `decrypt` for parsed arguments; returns the exit status."""
    inputs = list(args.input) or ["-"]
    if args.output_dir is None:
        if len(inputs) > 1:
            hint = " (--passphrase takes no value: it is asked at the terminal)" if getattr(args, "passphrase", 0) else ""
            print(f"cb3 {args.command}: several inputs need --output-dir DIR{hint}", file=sys.stderr)
            return EXIT_USAGE
        args.input = inputs[0]
        return _run_one(args)
    return _run_many(args, inputs)


def _run_many(args: argparse.Namespace, inputs: list[str]) -> int:
    """--output-dir: each input into DIR, with the key or the passphrase read
    once; stops at the first failure (the outputs made before it stay)."""
    command = args.command
    suffix = ".cb3"
    if args.output != "-" or "-" in inputs or not os.path.isdir(args.output_dir):
        problem = ("-o and --output-dir exclude each other" if args.output != "-" else
                   "stdin (-) cannot be one of several inputs" if "-" in inputs else
                   f"--output-dir {args.output_dir} is not a directory")
        print(f"cb3 {command}: {problem}", file=sys.stderr)
        return EXIT_USAGE
    names = []
    for name in inputs:
        base = os.path.basename(name)
        if command == "decrypt" and not (base.endswith(suffix) and len(base) > len(suffix)):
            print(f"cb3 {command}: {name} does not end in {suffix}: decrypt it with -o", file=sys.stderr)
            return EXIT_USAGE
        names.append(base + suffix if command == "encrypt" else base[: -len(suffix)])
    args.input = inputs[0]
    status = _run_one(args, resolve_only=True)  # the key or the passphrase, once
    if status != EXIT_OK:
        return status
    try:
        for name, out in zip(inputs, names):
            args.input, args.output = name, os.path.join(args.output_dir, out)
            status = _run_one(args)
            if status != EXIT_OK:
                return status
    finally:
        key = args.secret[0]
        if isinstance(key, bytearray):
            key[:] = bytes(len(key))
    return EXIT_OK


def _run_one(args: argparse.Namespace, resolve_only: bool = False) -> int:
    """One input to one output (or, with `resolve_only`, just the key or
    passphrase, kept in args.secret for the inputs that follow)."""
    command = args.command
    args.streamed_to = None  # set by _run: where plaintext went as it verified
    try:
        with _signals_unwind():
            if resolve_only:
                args.secret = _secret(args, None)
                return EXIT_OK
            return _run(args)
    except UsageError as error:
        print(f"cb3 {command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except secrets.PassphraseUsageError as error:
        print(f"cb3 {command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except cb3.PassphraseLimitError as error:
        print(f"cb3 {command}: {args.input}: {secrets.limit_message(error)} (no output written)", file=sys.stderr)
        return EXIT_INVALID
    except cb3.WrongPassphrase as error:
        where = "" if args.output == "-" or error.args[0].startswith("key file") else " (no output written)"
        print(f"cb3 {command}: {'' if where == '' else args.input + ': '}{error}{where}", file=sys.stderr)
        return EXIT_INVALID
    except cb3.ChunkedError as error:
        if args.streamed_to is None:
            where = "" if args.output == "-" else " (no output written)"
        elif command == "decrypt":
            where = f" (the output on {args.streamed_to} is incomplete: discard it)"
        else:
            where = ""
        print(f"cb3 {command}: {args.input}: {error}{where}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print(f"cb3 {command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated as stop:
        print(f"cb3 {command}: terminated by {signal.Signals(stop.signum).name}", file=sys.stderr)
        return 128 + stop.signum
    except OSError as error:
        print(f"cb3 {command}: {_describe(error)}", file=sys.stderr)
        return EXIT_IO


def _associated_data(args: argparse.Namespace) -> bytes | None:
    if args.associated_data is None:
        return None
    try:
        return bytes(args.associated_data.encode("utf-8"))
    except UnicodeEncodeError:  # undecodable argv bytes (surrogateescape)
        raise UsageError("--associated-data must be valid UTF-8 text") from None


def _output_path(output: str, force: bool) -> tuple[str, bool]:
    """(path to write, in place?) for -o OUTPUT. A symlink is followed (its
    target is replaced, the link stays, as cp does); a device or FIFO is
    written in place, streaming, as stdout is (renaming a file over it would
    replace the node itself: `decrypt -o /dev/null` as root, say); a regular
    file, or no file, is written atomically."""
    if os.path.lexists(output) and not force:
        raise UsageError(f"{output} exists (use --force to overwrite)")
    target = os.path.realpath(output)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target, False
    except OSError as error:
        raise OSError(error.errno, error.strerror, output) from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{output} is a directory")
    return target, not stat.S_ISREG(mode)


def _passphrase(args: argparse.Namespace, source: Any) -> str:
    """The passphrase of a file under no key option: asked twice to encrypt,
    once to decrypt (after a look at the input: a stream under a key needs
    the key, and no passphrase is asked for it)."""
    if args.command == "decrypt" and source is not None:
        peek = getattr(source, "peek", None)
        start = peek(len(MAGIC)) if peek is not None else b""
        if start[: len(MAGIC)] == CHUNKED_MAGIC:
            raise UsageError(f"{args.input} is a stream under a key, not a passphrase file: use --key-file or --key-env")
    return secrets.read(args, confirm=args.command == "encrypt", stdin_is_input=args.input == "-")


def _secret(args: argparse.Namespace, source: Any) -> tuple[bytes | bytearray | None, str | None]:
    """(the key, None) or (None, the passphrase) the options name; `source`
    (the input, when already open) lets decrypt look at it first."""
    key = _key(args)
    if key is not None:
        return key, None
    if not secrets.given(args) and args.command == "encrypt":
        raise UsageError("a key (--key-file, --key-env) or a passphrase (--passphrase, --passphrase-file, "
                         "--passphrase-fd, --passphrase-env) is required")
    return None, _passphrase(args, source)


def _run(args: argparse.Namespace) -> int:
    secret = getattr(args, "secret", None)
    key = secret[0] if secret is not None else _key(args)
    if key is None and secret is None and not secrets.given(args) and args.command == "encrypt":
        raise UsageError("a key (--key-file, --key-env) or a passphrase (--passphrase, --passphrase-file, "
                         "--passphrase-fd, --passphrase-env) is required")
    aad = _associated_data(args)
    target, in_place = ("-", True) if args.output == "-" else _output_path(args.output, args.force)
    if args.output == "-" and args.command == "encrypt" and sys.stdout.isatty() and not args.force:
        raise UsageError("refusing to write ciphertext to a terminal: use -o FILE or redirect (or --force)")
    source: Any
    if args.input == "-":
        source = sys.stdin.buffer
    else:
        try:
            source = open(args.input, "rb")
        except OSError as error:
            raise OSError(error.errno, error.strerror, args.input) from None
    sink: Any = None
    try:
        if same_file(source, sys.stdout.buffer if args.output == "-" else target):
            raise UsageError(f"{args.input} and the output are the same file")
        if args.output == "-":
            sys.stdout.flush()
            sink = sys.stdout.buffer
            args.streamed_to = "stdout"
        elif in_place:
            try:
                sink = open(target, "wb")
            except OSError as error:
                raise OSError(error.errno, error.strerror, args.output) from None
            args.streamed_to = args.output
        else:
            sink = target  # a path: written atomically by the helpers
        options: dict[str, Any] = {}
        if key is None:
            options["passphrase"] = secret[1] if secret is not None else _passphrase(args, source)
            options.update(secrets.costs(args) if args.command == "encrypt" else secrets.limits(args))
        update, bar = _progress(args, args.input, _input_size(source))
        try:
            if args.command == "encrypt":
                cb3.encrypt_file(
                    key, source, sink, associated_data=aad, chunk_size=args.chunk_size,
                    max_threads=args.threads, progress=update, **options,
                )
            else:
                cb3.decrypt_file(key, source, sink, associated_data=aad, max_threads=args.threads, progress=update,
                                 **options)
        except ValueError as error:
            if isinstance(error, cb3.PassphraseLimitError) or "passphrase" not in options:
                raise
            raise UsageError(str(error)) from None  # parameters the derivation refuses
        finally:
            if isinstance(key, bytearray) and secret is None:  # the key of this file alone
                key[:] = bytes(len(key))
            if bar is not None:
                bar.close()
        if args.output == "-":
            sys.stdout.buffer.flush()
    finally:
        if source is not sys.stdin.buffer:
            source.close()
        if in_place and sink is not None and sink is not sys.stdout.buffer:
            sink.close()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cb3")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status
