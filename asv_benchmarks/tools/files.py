"""`measure.py files [PAGE]`: encrypting and decrypting a file end to end
(cb3's chunked stream format, cb3/chunked/) against `encrypt_into` on the
same bytes in memory, on 1 and 2 threads, beside PyNaCl's secretstream and
Debian's `age` when installed; and the CLI's peak RSS on a multi-GiB sparse
file. With PAGE (docs/results/files.md), the rows go into its generated
section `files` (pages.py).

    python asv_benchmarks/measure.py files [PAGE] [--file-size 256M] [--sparse-size 2G] [--rounds N] [--dir /dev/shm]

Files live in a temporary directory on tmpfs (/dev/shm) so the disk does
not set the pace; every case runs in interleaved rounds and the median wall
time is reported, with the median CPU time (user + system, all threads).
Ratios: `vs into` = this case's throughput / in-memory `encrypt_into` on one
thread (the target: >= 0.85 on one thread); `vs 1 thread` = this case / the
same case on one thread (the target: >= 1.6).

The `vs into` reference does no file I/O, the file rows do: the row "read +
write only" is that I/O alone (reading the file from the page cache and
writing a new one, which allocates its pages). So `vs into + copy` =
(encrypt_into + that row) / this case, the reference with the file I/O
counted, is reported beside `vs into`, and `cpu vs into` compares CPU time,
which a loaded machine disturbs less than wall time. The row "read +
encrypt_into + write" is the same file as one message, read and written
whole.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Callable, Optional

import cb3

from . import pages
from .machine import load_average

CHUNK = 64 * 1024
INTO = "cb3 encrypt_into (in memory), 1 thread"
COPY = "read + write only (the file I/O, no encryption)"


def _cpu_seconds() -> float:
    """User + system time of this process and its finished children (age)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def _secretstream_cases(key: bytes, src: str, dst: str) -> dict[str, Callable[[], None]]:
    try:
        from nacl.bindings import (
            crypto_secretstream_xchacha20poly1305_TAG_FINAL as FINAL,
            crypto_secretstream_xchacha20poly1305_TAG_MESSAGE as MESSAGE,
            crypto_secretstream_xchacha20poly1305_init_push as init_push,
            crypto_secretstream_xchacha20poly1305_push as push,
            crypto_secretstream_xchacha20poly1305_state as State,
        )
    except ImportError:
        return {}

    def encrypt() -> None:
        # The same shape: 64 KiB chunks, the final one tagged, one lookahead read.
        state = State()
        with open(src, "rb") as fin, open(dst, "wb") as fout:
            fout.write(init_push(state, key))
            chunk = fin.read(CHUNK)
            while True:
                following = fin.read(CHUNK)
                fout.write(push(state, chunk, None, FINAL if not following else MESSAGE))
                if not following:
                    break
                chunk = following

    return {"PyNaCl secretstream encrypt (64 KiB chunks)": encrypt}


def _age_cases(workdir: str, src: str, dst: str) -> dict[str, Callable[[], None]]:
    age, keygen = shutil.which("age"), shutil.which("age-keygen")
    if not age or not keygen:
        return {}
    identity = os.path.join(workdir, "age-identity")
    subprocess.run([keygen, "-o", identity], check=True, capture_output=True)
    recipient = subprocess.run([keygen, "-y", identity], check=True, capture_output=True, text=True).stdout.strip()
    encrypted = os.path.join(workdir, "age-encrypted")

    def encrypt() -> None:
        subprocess.run([age, "-r", recipient, "-o", dst, src], check=True)

    def decrypt() -> None:
        subprocess.run([age, "-d", "-i", identity, "-o", dst, encrypted], check=True)

    encrypt()
    os.replace(dst, encrypted)
    return {"age encrypt (X25519 recipient; Go)": encrypt, "age decrypt": decrypt}


RSS_WRAPPER = textwrap.dedent(
    """
    import json, resource, subprocess, sys
    started = __import__("time").perf_counter()
    status = subprocess.run(sys.argv[1:]).returncode
    seconds = __import__("time").perf_counter() - started
    print(json.dumps([status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, seconds]))
    """
)


def _measured(args: list[str]) -> tuple[int, int, float]:
    out = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *args], check=True, capture_output=True, text=True)
    status, rss, seconds = json.loads(out.stdout.splitlines()[-1])
    return status, rss, seconds


def sparse_rss(workdir: str, size: int, threads: int = 1) -> list[str]:
    """The CLI on a sparse file of `size` bytes: time and peak RSS of
    encrypt and decrypt, against the interpreter importing cb3."""
    key_file = os.path.join(workdir, "key")
    with open(key_file, "wb") as f:
        f.write(cb3.generate_key())
    sparse, enc, dec = (os.path.join(workdir, name) for name in ("sparse", "sparse.cb3", "sparse.out"))
    with open(sparse, "wb") as f:
        f.truncate(size)
    python = [sys.executable, "-P", "-m", "cb3"]
    baseline = _measured([*python, "--cflags"])[1]
    lines = []
    try:
        for verb, source, target in (("encrypt", sparse, enc), ("decrypt", enc, dec)):
            status, rss, seconds = _measured(
                [*python, verb, "--key-file", key_file, "--threads", str(threads), "-o", target, source]
            )
            if status != 0:
                raise RuntimeError(f"python -m cb3 {verb} exited with {status}")
            if verb == "encrypt":
                os.unlink(sparse)
            else:
                os.unlink(enc)
            lines.append(
                f"  python -m cb3 {verb} {size / 2**30:g} GiB sparse file: {seconds:6.2f} s "
                f"({size / seconds / 1e6:5.0f} MB/s), peak RSS {rss / 2**20:.1f} MiB "
                f"(interpreter + cb3 alone: {baseline / 2**20:.1f} MiB)"
            )
        if os.path.getsize(dec) != size:
            raise RuntimeError("sparse round trip changed the size")
    finally:
        for path in (sparse, enc, dec):
            if os.path.exists(path):
                os.unlink(path)
    return lines


def run(file_size: int, sparse_size: int, rounds: int, directory: str) -> str:
    workdir = tempfile.mkdtemp(prefix="cb3-bench-", dir=directory)
    try:
        src, dst = os.path.join(workdir, "plain"), os.path.join(workdir, "out")
        data = os.urandom(file_size)
        with open(src, "wb") as f:
            f.write(data)
        key, nonce = cb3.generate_key(), cb3.generate_nonce()
        encrypted = os.path.join(workdir, "encrypted")
        cb3.encrypt_file(key, src, encrypted)
        out = bytearray(file_size + cb3.TAG_SIZE)

        def into(threads: int) -> Callable[[], None]:
            cipher = cb3.ChaCha20Blake3(key, max_threads=threads)

            def run() -> None:
                cipher.encrypt_into(nonce, data, None, out)

            return run

        def one_shot() -> None:
            # The same file as one message: read it whole, encrypt_into, write it.
            cipher = cb3.ChaCha20Blake3(key)
            with open(src, "rb") as f:
                whole = f.read()
            sealed = bytearray(len(whole) + cb3.TAG_SIZE)
            cipher.encrypt_into(nonce, whole, None, sealed)
            with open(dst, "wb") as f:
                f.write(sealed)

        def copy_only() -> None:
            # The file I/O of encrypt_file without the encryption: the floor
            # of any tool that reads the file and writes a new one.
            piece = bytearray(256 * 1024)
            with open(src, "rb", buffering=0) as fin, open(dst, "wb", buffering=0) as fout:
                while n := fin.readinto(piece):
                    fout.write(memoryview(piece)[:n])

        def encrypt_file(threads: int) -> Callable[[], None]:
            def run() -> None:
                cb3.encrypt_file(key, src, dst, max_threads=threads)

            return run

        def decrypt_file(threads: int) -> Callable[[], None]:
            def run() -> None:
                cb3.decrypt_file(key, encrypted, dst, max_threads=threads)

            return run

        cases: dict[str, Callable[[], None]] = {
            INTO: into(1),
            "cb3 encrypt_into (in memory), 2 threads": into(2),
            "read + encrypt_into + write (one message)": one_shot,
            COPY: copy_only,
            "cb3 encrypt_file, 1 thread": encrypt_file(1),
            "cb3 encrypt_file, 2 threads": encrypt_file(2),
            "cb3 decrypt_file, 1 thread": decrypt_file(1),
            "cb3 decrypt_file, 2 threads": decrypt_file(2),
        }
        cases.update(_secretstream_cases(key, src, dst))
        cases.update(_age_cases(workdir, src, dst))
        samples: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, case in cases.items():
                if os.path.exists(dst):
                    os.unlink(dst)
                used = _cpu_seconds()
                start = time.perf_counter()
                case()
                samples[name].append(time.perf_counter() - start)
                cpu[name].append(_cpu_seconds() - used)
        del data, out
        median = {name: statistics.median(values) for name, values in samples.items()}
        cpu_median = {name: statistics.median(values) for name, values in cpu.items()}
        reference = median[INTO]
        with_io = reference + median[COPY]
        lines = [
            f"file rows: {file_size / 2**20:g} MiB file on {directory} ({os.cpu_count()} cores), "
            f"median of {rounds} interleaved rounds, wall time end to end; cpu = user + system time "
            f"of all threads (and children)",
        ]
        for name, seconds in median.items():
            extra = ""
            single = name.replace("2 threads", "1 thread")
            if single != name and single in median:
                extra = f"  vs 1 thread {median[single] / seconds:5.2f}"
            elif name.startswith("cb3 encrypt_file"):
                extra = f"  vs into + copy {with_io / seconds:5.2f}  cpu vs into {cpu_median[INTO] / cpu_median[name]:5.2f}"
            lines.append(
                f"  {name:46} {seconds * 1e3:9.1f} ms {file_size / seconds / 1e6:7.0f} MB/s"
                f"  cpu {cpu_median[name] * 1e3:7.1f} ms  vs into {reference / seconds:5.2f}{extra}"
            )
        missing = [n for n, ok in (("PyNaCl", _secretstream_cases(key, src, dst)), ("age", shutil.which("age"))) if not ok]
        if missing:
            lines.append(f"  (not installed, skipped: {', '.join(missing)})")
        if sparse_size:
            lines += sparse_rss(workdir, sparse_size)
        return "\n".join(lines)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def rows(file_size: str = "256M", sparse_size: str = "2G", rounds: int = 3, directory: str | None = None) -> str:
    """The file rows, measured (sizes as on the command line, e.g. "256M")."""
    if directory is None:
        directory = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return run(_size(file_size), _size(sparse_size), rounds, directory)


def main(file_size: str = "256M", sparse_size: str = "2G", rounds: int = 3, directory: str | None = None) -> int:
    print(rows(file_size, sparse_size, rounds, directory))
    return 0


#: The markers of the section that `files PAGE` rewrites.
BEGIN_FILES, END_FILES = pages.markers("files")


def write_files(path: str, file_size: str, sparse_size: str, rounds: int, directory: Optional[str], options: str) -> int:
    """The file rows, measured, into the `files` section of the page at `path`."""

    def produce(command: str, load: str) -> str:
        measured = rows(file_size, sparse_size, rounds, directory)
        return "\n".join([BEGIN_FILES, pages.stamp(command, load, load_average()) + ".", "", "```", measured, "```", END_FILES])

    return pages.write_section(
        path, "files", options, lambda text, section: pages.replace_section(text, section, "files"), produce
    )
