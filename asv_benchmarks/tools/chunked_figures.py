"""`measure.py chunked-figures`: the figures docs/security-testing.md quotes
for the chunked format's hardening, measured on the cb3 that this
interpreter imports:

    python asv_benchmarks/measure.py chunked-figures [--label TEXT] [--header]

prints one markdown table row per measurement:
  - the peak of Python's traced allocations (tracemalloc) while a 59-byte
    input whose header claims 16 MiB chunks is rejected, by the reader and by
    decrypt_file on 1 and 2 threads (streams and regular files);
  - what `max_threads=64` costs on this machine: the writer's buffer, and the
    sealing threads encrypt_file runs at once from a pipe-like source;
  - the copies of a 32-byte plaintext needle left in the process's memory
    after encrypt_file and decrypt_file on 1 and 2 threads, 3 MiB and
    3 MiB + 1000 bytes, to streams, regular files and a path (the scan of
    tests/properties/test_secrets.py, run in a fresh process whose malloc keeps every
    freed block mapped).
Run it with the build under test and with an older one to compare.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import subprocess
import sys
import tempfile
import time

import cb3
from cb3 import chunked

from .machine import load_average, usable_cores
from .pages import COMMAND

KEY = bytes(range(1, 33))
TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests")


def _tests_helpers():  # type: ignore[no-untyped-def]
    """The tests' own measurements (tests/chunked/test_chunked_hardening.py)."""
    for folder in (TESTS, os.path.join(TESTS, "chunked")):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    import test_chunked_hardening

    return test_chunked_hardening


def hostile_header_rows(directory: str) -> list[tuple[str, str]]:
    peak_allocation = _tests_helpers().peak_allocation
    hostile = chunked.encode_header(chunked.CHUNKED_MAX_CHUNK_SIZE, bytes(15)) + bytes(32)
    src, dst = os.path.join(directory, "in"), os.path.join(directory, "out")
    with open(src, "wb") as f:
        f.write(hostile)
    rows = []
    for threads in (1, 2):
        for name, work in [
            ("DecryptingReader.read()", lambda: cb3.DecryptingReader(io.BytesIO(hostile), KEY,
                                                                      max_threads=threads).read()),
            ("decrypt_file, file objects", lambda: cb3.decrypt_file(KEY, io.BytesIO(hostile), io.BytesIO(),
                                                                     max_threads=threads)),
            ("decrypt_file, regular files", lambda: cb3.decrypt_file(KEY, src, dst, max_threads=threads)),
        ]:
            peak = peak_allocation(work)
            rows.append((f"{len(hostile)}-byte input claiming 16 MiB chunks: {name}, {threads} thread(s)",
                         f"peak allocation {peak / 2**20:.2f} MiB"))
    return rows


def thread_rows() -> list[tuple[str, str]]:
    CountingPipe = _tests_helpers().CountingPipe
    writer = cb3.EncryptingWriter(io.BytesIO(), KEY, max_threads=64)
    pending = len(writer._pending)
    writer.abort()
    seen: list[int] = []
    cb3.encrypt_file(KEY, CountingPipe(seen), io.BytesIO(), max_threads=64)
    cores = usable_cores()
    return [(f"max_threads=64 on {cores} usable cores: EncryptingWriter buffer", f"{pending / 2**20:.2f} MiB"),
            ("max_threads=64: encrypt_file's Python threads at once (from a pipe)", f"{max(seen)}")]


def scan_rows(directory: str) -> list[tuple[str, str]]:
    code = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/properties']; import test_secrets; "
            "print(test_secrets.plaintext_left_by_the_file_helpers(int(sys.argv[2]), sys.argv[3]))")
    rows = []
    for threads in (1, 2):
        out = subprocess.run([sys.executable, "-P", "-c", code, TESTS, str(threads), directory],
                             capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
        found = int(out.stdout)
        rows.append((f"encrypt_file + decrypt_file (streams, regular files, a path), {threads} thread(s): "
                     "plaintext left in memory",
                     f"{found} copies of the 32-byte needle ({found * 32 / 1024:.0f} KiB)"))
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="measure.py chunked-figures", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default=f"cb3 {cb3.__version__}", help="the first column: which build")
    parser.add_argument("--header", action="store_true", help="first print what ran where, and the table's header")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        rows = hostile_header_rows(directory) + thread_rows() + scan_rows(directory)
    if args.header:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        print(f"Generated by `{COMMAND} chunked-figures` on {when}: {platform.python_implementation()} "
              f"{platform.python_version()}, {os.cpu_count()} cores, load average {load_average()} (1/5/15 min).\n")
        print("| build | measurement | figure |\n|---|---|---|")
    for what, figure in rows:
        print(f"| {args.label} | {what} | {figure} |")
    return 0
