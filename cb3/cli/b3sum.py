"""``b3sum`` on cb3: print or check BLAKE3 checksums (``python -m cb3.cli.b3sum``).

Output, options and exit status follow the ``b3sum`` command of the BLAKE3
project, so checkfiles move freely between the two::

    python -m cb3.cli.b3sum FILE...              # <64 hex digits>  FILE
    python -m cb3.cli.b3sum --length 64 FILE     # longer (extendable) output
    python -m cb3.cli.b3sum --keyed FILE < key   # keyed mode, the raw 32-byte key on stdin
    python -m cb3.cli.b3sum --derive-key CONTEXT FILE
    python -m cb3.cli.b3sum FILE... > sums && python -m cb3.cli.b3sum --check sums
    python -m cb3.cli.b3sum --no-names --raw --num-threads 4 --tag --seek N --no-mmap --quiet

With no FILE, or with ``-``, standard input is read. Regular files are
memory-mapped and hashed on several threads (``--num-threads``; by default
one per logical core). When standard error is a terminal, files larger
than 256 MiB show a progress bar there. Exit status: 0 when every input was
hashed (and, with ``--check``, matched), 1 otherwise, 2 for a usage error,
130 after Ctrl-C (also while reading an endless file such as /dev/zero).

The command is ``main(argv)``; ``python -m cb3 b3sum`` (cb3/cli/__init__.py) dispatches to it.
"""

from __future__ import annotations

import argparse
import hmac
import mmap
import os
import stat
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Protocol, cast

from .. import __version__
from ..hashing import blake3
from .common import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, Progress, stdout_went_away

__all__ = ["main", "PROGRESS_MIN_SIZE"]

NAME = "b3sum"
#: Files larger than this show a progress bar when stderr is a terminal.
PROGRESS_MIN_SIZE = 256 * 1024 * 1024
#: Bytes handed to one update() call when reading stdin or --no-mmap files.
READ_SIZE = 1024 * 1024
#: Bytes hashed between two progress-bar updates (a multiple of the BLAKE3
#: chunk, large enough for the threads to have work).
PROGRESS_STEP = 64 * 1024 * 1024
#: Bytes of hex output produced per digest() call for long --length values.
OUTPUT_STEP = 1024 * 1024


class Failure(Exception):
    """An error to report as ``b3sum: ...`` and count as a failed input."""


# ---- output ----


def _write(data: bytes) -> None:
    stream = sys.stdout
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(data)
    else:  # a text-only stream: b3sum's output is UTF-8
        stream.write(data.decode("utf-8", "surrogateescape"))


def _error(message: str) -> None:
    sys.stdout.flush()
    print(f"{NAME}: {message}", file=sys.stderr, flush=True)


def _describe(error: BaseException) -> str:
    """An OSError as Rust's io::Error prints it (what b3sum shows)."""
    if isinstance(error, OSError) and error.errno is not None and error.strerror:
        return f"{error.strerror} (os error {error.errno})"
    return str(error)


def _display(path: str) -> str:
    """The path as b3sum prints it: lossy UTF-8 (invalid bytes become U+FFFD)."""
    return os.fsencode(path).decode("utf-8", "replace")


def _escape(name: str) -> tuple[str, bool]:
    if any(c in name for c in "\\\n\r"):
        return name.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r"), True
    return name, False


def _hex_output(hasher: blake3, length: int, seek: int) -> None:
    done = 0
    while done < length:
        step = min(OUTPUT_STEP, length - done)
        _write(hasher.hexdigest(step, seek=seek + done).encode("ascii"))
        done += step


def _raw_output(hasher: blake3, length: int, seek: int) -> None:
    done = 0
    while done < length:
        step = min(OUTPUT_STEP, length - done)
        _write(hasher.digest(step, seek=seek + done))
        done += step


# ---- input ----


class _Readable(Protocol):
    def readinto(self, buffer: memoryview, /) -> int | None: ...


def _update_from(hasher: blake3, stream: _Readable) -> None:
    buffer = bytearray(READ_SIZE)
    view = memoryview(buffer)
    while True:
        n = stream.readinto(view)
        if not n:
            return
        hasher.update(view[:n])


def _update_mmap_with_progress(hasher: blake3, path: str, size: int) -> None:
    """Memory-maps the file and hashes it in large pieces (each on several
    threads, the GIL released), drawing the progress bar in between."""
    progress = Progress(_display(path), size)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
            for start in range(0, len(view), PROGRESS_STEP):
                hasher.update(view[start : start + PROGRESS_STEP])
                progress.update(start + min(PROGRESS_STEP, len(view) - start))
            progress.update(len(view), final=True)
        finally:
            view.release()
            progress.close()


def _hash_path(base: blake3, path: str, args: argparse.Namespace) -> blake3:
    hasher = base.copy()
    if path == "-":
        if args.keyed:
            raise Failure("Cannot open `-` in keyed mode")
        _update_from(hasher, cast(_Readable, sys.stdin.buffer))
        return hasher
    if args.no_mmap:
        with open(path, "rb") as f:
            _update_from(hasher, f)
        return hasher
    info = os.stat(path)
    if stat.S_ISREG(info.st_mode) and info.st_size > PROGRESS_MIN_SIZE and sys.stderr.isatty():
        _update_mmap_with_progress(hasher, path, info.st_size)
        return hasher
    hasher.update_mmap(path)
    return hasher


# ---- --check ----


class _CheckLine:
    def __init__(self, shown: str, path: str, expected: bytes) -> None:
        self.shown, self.path, self.expected = shown, path, expected


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(text):
            raise Failure("Invalid backslash escape")
        escaped = {"n": "\n", "r": "\r", "\\": "\\"}.get(text[i + 1])
        if escaped is None:
            raise Failure("Invalid backslash escape")
        out.append(escaped)
        i += 2
    return "".join(out)


def _parse_check_line(line: str) -> _CheckLine:
    line = line.rstrip("\r\n")
    if not line:
        raise Failure("Empty line")
    escaped = line.startswith("\\")
    rest = line[1:] if escaped else line
    if "  " in rest:
        hash_hex, file_string = rest.split("  ", 1)
    elif rest.startswith("BLAKE3 (") and ") = " in rest:
        file_string, hash_hex = rest[len("BLAKE3 (") :].rsplit(") = ", 1)
    else:
        raise Failure("Invalid check line format")
    if len(hash_hex.encode("utf-8")) != 64:  # bytes, as upstream counts
        raise Failure("Invalid hash length")
    if any(c not in "0123456789abcdef" for c in hash_hex):
        raise Failure("Invalid hex")
    path = _unescape(file_string) if escaped else file_string
    if not path:
        raise Failure("empty file path")
    if "\0" in path:
        raise Failure("Null character in path")
    if "\ufffd" in path:
        raise Failure("Unicode replacement character in path")
    return _CheckLine(("\\" if escaped else "") + file_string, path, bytes.fromhex(hash_hex))


def _check_one_line(base: blake3, line: str, args: argparse.Namespace) -> bool:
    try:
        parsed = _parse_check_line(line)
    except Failure as e:
        _error(str(e))
        return False
    try:
        found = _hash_path(base, parsed.path, args).digest()
    except (OSError, Failure) as e:
        _write(f"{parsed.shown}: FAILED ({_describe(e)})\n".encode("utf-8"))
        return False
    if hmac.compare_digest(found, parsed.expected):
        if not args.quiet:
            _write(f"{parsed.shown}: OK\n".encode("utf-8"))
        return True
    _write(f"{parsed.shown}: FAILED\n".encode("utf-8"))
    return False


def _check_lines(data: bytes) -> Iterator[str]:
    """The lines of a checkfile as upstream b3sum reads them (its
    what_does_check_do.md, rule 5): separated by a newline (U+000A) and
    nothing else, each decoded as UTF-8 on its own. str.splitlines() would
    also break at VT, FF, FS, GS, RS, NEL, U+2028 and U+2029, which a file
    name may hold unescaped: a planted name could then inject check lines.
    Invalid UTF-8 ends the check with an error where it occurs, after the
    lines before it were checked, as upstream does."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        try:
            yield data[start:end].decode("utf-8")
        except UnicodeDecodeError as e:
            raise Failure("stream did not contain valid UTF-8") from e
        start = end


def _check_file(base: blake3, path: str, args: argparse.Namespace) -> int:
    """Checks every line of one checkfile; returns the number of failures."""
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    failures = 0
    for line in _check_lines(data):
        if not _check_one_line(base, line, args):
            failures += 1
    return failures


# ---- arguments ----


def _u64(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid digit found in string: {text!r}") from None
    if not 0 <= value < 2**64 or not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer in range(0, 2**64)")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=NAME,
        description="Print or check BLAKE3 checksums (cb3's b3sum).",
        allow_abbrev=False,
    )
    parser.add_argument("file", nargs="*", metavar="FILE", help="files to hash, or checkfiles to check; - or none: stdin")
    parser.add_argument("--keyed", action="store_true", help="use the keyed mode, reading the 32-byte key from stdin")
    parser.add_argument("--derive-key", metavar="CONTEXT", help="use the key derivation mode with this context string")
    parser.add_argument("-l", "--length", type=_u64, metavar="LEN", help="output bytes, before hex encoding (default 32)")
    parser.add_argument("--seek", type=_u64, default=0, metavar="SEEK", help="starting output byte offset")
    parser.add_argument("--num-threads", type=_u64, metavar="NUM", help="maximum threads (default: one per core)")
    parser.add_argument("--no-mmap", action="store_true", help="read files instead of memory-mapping them")
    parser.add_argument("--no-names", action="store_true", help="omit filenames in the output")
    parser.add_argument("--raw", action="store_true", help="write raw output bytes (one input only)")
    parser.add_argument("--tag", action="store_true", help="BSD-style output: BLAKE3 (FILE) = HASH")
    parser.add_argument("-c", "--check", action="store_true", help="read checksums from the FILEs and check them")
    parser.add_argument("--quiet", action="store_true", help="with --check, print nothing for files that match")
    parser.add_argument("-V", "--version", action="version", version=f"{NAME} {__version__} (cb3)")
    return parser


def _validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.keyed and not args.file:
        parser.error("--keyed requires at least one FILE (stdin carries the key)")
    if args.keyed and args.derive_key is not None:
        parser.error("--derive-key cannot be used with --keyed")
    if args.check:
        for flag, given in (
            ("--derive-key", args.derive_key is not None),
            ("--keyed", args.keyed),
            ("--length", args.length is not None),
            ("--raw", args.raw),
            ("--tag", args.tag),
            ("--no-names", args.no_names),
        ):
            if given:
                parser.error(f"--check cannot be used with {flag}")
    if args.quiet and not args.check:
        parser.error("--quiet requires --check")


def _read_key() -> bytes:
    stdin = sys.stdin.buffer
    key = b""
    while len(key) < 33:
        chunk = stdin.read(33 - len(key))
        if not chunk:
            break
        key += chunk
    if len(key) < 32:
        raise Failure(f"expected 32 key bytes from stdin, found {len(key)}")
    if len(key) > 32:
        raise Failure("read more than 32 key bytes from stdin")
    return key


def main(argv: Sequence[str] | None = None) -> int:
    """Runs b3sum with `argv` (default: ``sys.argv[1:]``); returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        _validate(parser, args)
    except SystemExit as e:  # usage errors (2), --help and --version (0)
        return e.code if isinstance(e.code, int) else 2
    files = args.file or ["-"]
    if args.raw and len(files) > 1:
        print("Error: Only one filename can be provided when using --raw", file=sys.stderr)
        return EXIT_FAILURE
    max_threads = args.num_threads if args.num_threads else blake3.AUTO
    try:
        if args.keyed:
            base = blake3(key=_read_key(), max_threads=max_threads)
        elif args.derive_key is not None:
            base = blake3(derive_key_context=args.derive_key, max_threads=max_threads)
        else:
            base = blake3(max_threads=max_threads)
    except (Failure, OSError) as e:
        print(f"Error: {_describe(e)}", file=sys.stderr)
        return EXIT_FAILURE
    length = 32 if args.length is None else args.length
    try:
        return _run(base, files, length, args)
    except KeyboardInterrupt:
        # Ctrl-C, also during a read that never ends (/dev/zero, a FIFO):
        # update_mmap() handles signals between chunks. 130 is what a shell
        # reports for a command killed by SIGINT, as upstream b3sum is.
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return stdout_went_away()


def _run(base: blake3, files: list[str], length: int, args: argparse.Namespace) -> int:
    failures = 0
    try:
        for path in files:
            if args.check:
                try:
                    failures += _check_file(base, path, args)
                except (OSError, Failure) as e:
                    sys.stdout.flush()
                    print(f"Error: {_describe(e)}", file=sys.stderr)
                    return EXIT_FAILURE
                continue
            try:
                hasher = _hash_path(base, path, args)
            except (OSError, Failure) as e:
                failures += 1
                _error(f"{_display(path)}: {_describe(e)}")
                continue
            if args.raw:
                _raw_output(hasher, length, args.seek)
            elif args.no_names:
                _hex_output(hasher, length, args.seek)
                _write(b"\n")
            else:
                name, escaped = _escape(_display(path))
                prefix = b"\\" if escaped else b""
                if args.tag:
                    _write(prefix + f"BLAKE3 ({name}) = ".encode("utf-8"))
                    _hex_output(hasher, length, args.seek)
                    _write(b"\n")
                else:
                    _write(prefix)
                    _hex_output(hasher, length, args.seek)
                    _write(f"  {name}\n".encode("utf-8"))
        if args.check and failures:
            s = "" if failures == 1 else "s"
            _error(f"WARNING: {failures} computed checksum{s} did NOT match")
    finally:
        sys.stdout.flush()
    return EXIT_FAILURE if failures else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
