"""`python -m cb3 encrypt` / `decrypt` (cb3/cli/files.py): keys from files
and the environment, stdin/stdout, exit codes, atomic output, disk full,
and a sparse file round trip in the memory of a few chunks."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import cb3
from cb3.chunked import fileio
from cb3.cli import files as cli_files
from helpers import signals_at_default

KEY = bytes(range(1, 33))


def cb3_cli(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "cb3", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=600,
    )


@pytest.fixture
def key_file(tmp_path: Path) -> str:
    path = tmp_path / "key"
    path.write_bytes(KEY)
    path.chmod(0o600)
    return str(path)


@pytest.mark.threads  # --threads 2: deselected under HPy debug mode only (pyproject.toml)
def test_round_trip_paths_and_env(tmp_path: Path, key_file: str) -> None:
    src, enc, dec = tmp_path / "in", tmp_path / "in.cb3", tmp_path / "out"
    data = os.urandom(300_000)
    src.write_bytes(data)
    r = cb3_cli("encrypt", "--key-file", key_file, "-o", str(enc), str(src), "--threads", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"" and enc.read_bytes()[:7] == b"CB3STRM"
    r = cb3_cli("decrypt", "--key-env", "CB3_TEST_KEY", "-o", str(dec), str(enc), env={"CB3_TEST_KEY": KEY.hex()})
    assert r.returncode == 0, r.stderr
    assert dec.read_bytes() == data
    # The library reads what the CLI wrote and the other way round.
    assert cb3.DecryptingReader(open(enc, "rb"), KEY).read() == data
    hex_key = tmp_path / "hexkey"
    hex_key.write_text(KEY.hex() + "\n")
    r = cb3_cli("decrypt", "--key-file", str(hex_key), str(enc))
    assert r.returncode == 0 and r.stdout == data


def test_stdin_stdout_and_associated_data(key_file: str) -> None:
    data = os.urandom(100_000)
    enc = cb3_cli("encrypt", "--key-file", key_file, "--associated-data", "v1", "--chunk-size", "4096", stdin=data)
    assert enc.returncode == 0, enc.stderr
    assert len(enc.stdout) == 27 + len(data) + 32 * -(-len(data) // 4096)
    dec = cb3_cli("decrypt", "--key-file", key_file, "--associated-data", "v1", "-", "-o", "-", stdin=enc.stdout)
    assert dec.returncode == 0 and dec.stdout == data
    wrong = cb3_cli("decrypt", "--key-file", key_file, stdin=enc.stdout)
    assert wrong.returncode == 1 and wrong.stdout == b""
    assert b"chunk 0 failed to authenticate" in wrong.stderr and b"discard" in wrong.stderr


def test_failures_leave_no_output(tmp_path: Path, key_file: str) -> None:
    src, enc, dec = tmp_path / "in", tmp_path / "in.cb3", tmp_path / "out"
    src.write_bytes(os.urandom(200_000))
    assert cb3_cli("encrypt", "--key-file", key_file, "-o", str(enc), str(src)).returncode == 0
    stream = enc.read_bytes()
    cases = {
        "truncated": (stream[: 27 + 2 * (65536 + 32)], b"truncated stream"),
        "tampered": (stream[:-1] + bytes([stream[-1] ^ 1]), b"chunk 3 failed to authenticate"),
        "not a stream": (b"hello" * 10, b"not a cb3 stream"),
    }
    for name, (content, message) in cases.items():
        enc.write_bytes(content)
        r = cb3_cli("decrypt", "--key-file", key_file, "-o", str(dec), str(enc))
        assert r.returncode == 1, name
        assert message in r.stderr and b"no output written" in r.stderr, r.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "in.cb3", "key"], name
    enc.write_bytes(stream)
    other_key = tmp_path / "other"
    other_key.write_bytes(bytes(32))
    r = cb3_cli("decrypt", "--key-file", str(other_key), "-o", str(dec), str(enc))
    assert r.returncode == 1 and not dec.exists()


def test_usage_errors(tmp_path: Path, key_file: str) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"data")
    out = tmp_path / "exists"
    out.write_bytes(b"keep")
    r = cb3_cli("encrypt", "--key-file", key_file, "-o", str(out), str(src))
    assert r.returncode == 2 and b"exists" in r.stderr and out.read_bytes() == b"keep"
    assert cb3_cli("encrypt", "--key-file", key_file, "-o", str(out), "--force", str(src)).returncode == 0
    assert out.read_bytes() != b"keep"
    short = tmp_path / "short"
    short.write_bytes(b"x" * 31)
    for args, message in [
        (["--key-file", str(short)], b"must hold a 32-byte key"),
        (["--key-file", str(tmp_path / "missing")], b"cannot read key file"),
        (["--key-env", "CB3_NOT_SET_ANYWHERE"], b"is not set"),
        ([], b"a key (--key-file, --key-env) or a passphrase (--passphrase, --passphrase-file"),
        (["--key", KEY.hex()], b"never read from the command line"),
        (["--key-file", key_file, "--key=" + KEY.hex()], b"never read from the command line"),
        (["--key-file", key_file, "--threads", "0"], b"positive number"),
        (["--key-file", key_file, "--chunk-size", "10"], b"must be in 64.."),
    ]:
        r = cb3_cli("encrypt", *args, str(src))
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
    r = cb3_cli("encrypt", "--key-file", key_file, str(tmp_path / "missing"))
    assert r.returncode == 3 and b"No such file" in r.stderr


def test_threads_default_to_every_usable_core_and_the_core_owns_the_rules() -> None:
    """--threads defaults to auto for encrypt and decrypt (as b3sum's
    --num-threads does); a count the Rust core refuses, or a chunk size
    its header codec refuses, is a usage error quoting the rule."""
    from cb3.cli import build_parser

    parser = build_parser()
    for command in ("encrypt", "decrypt"):
        args = parser.parse_args([command, "--key-env", "K"])
        assert args.threads == cb3.AUTO
        assert parser.parse_args([command, "--key-env", "K", "--threads", "3"]).threads == 3
    assert parser.parse_args(["encrypt", "--key-env", "K", "--chunk-size", "0x1000"]).chunk_size == 4096
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]
    for command in ("encrypt", "decrypt"):
        assert "(default: auto, every usable core)" in " ".join(subparsers.choices[command].format_help().split())


def test_progress_bar(tmp_path: Path, key_file: str) -> None:
    src = tmp_path / "in"
    src.write_bytes(bytes(3 << 20))
    r = cb3_cli("encrypt", "--key-file", key_file, "--progress", "always", "-o", str(tmp_path / "o"), str(src))
    assert r.returncode == 0 and b"MiB" in r.stderr
    r = cb3_cli("encrypt", "--key-file", key_file, "-o", str(tmp_path / "p"), str(src))
    assert r.returncode == 0 and r.stderr == b""  # not a terminal


def test_disk_full_in_process(tmp_path: Path, key_file: str, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """A write that fails with ENOSPC half way: exit 3, no partial output."""
    src, enc = tmp_path / "in", tmp_path / "in.cb3"
    src.write_bytes(os.urandom(1 << 20))
    assert cli_files.main(["encrypt", "--key-file", key_file, "-o", str(enc), str(src)]) == 0
    real = fileio.write_all
    written = [0]

    def filling_up(sink: object, data: memoryview) -> None:
        written[0] += len(data)
        if written[0] > 300_000:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(sink, data)

    monkeypatch.setattr(fileio, "write_all", filling_up)
    for command, source in (("decrypt", enc), ("encrypt", src)):
        written[0] = 0
        out = tmp_path / f"{command}.out"
        assert cli_files.main([command, "--key-file", key_file, "-o", str(out), str(source)]) == 3
        assert "No space left on device" in capsys.readouterr().err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "in.cb3", "key"]


def test_disk_full_on_a_small_tmpfs(tmp_path: Path, key_file: str) -> None:
    """The real thing: a 1 MiB tmpfs (needs root to mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root: run this test as root (scripts/test.sh does in CI)")
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("no mount command here (the PyPy chroot has none): the CPython run on the host covers this")
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "cb3-test", str(mount)]).returncode != 0:
        pytest.skip("mount -t tmpfs failed (no CAP_SYS_ADMIN in this container?): run as root on a full system")
    try:
        src = tmp_path / "in"
        src.write_bytes(os.urandom(3 << 20))
        r = cb3_cli("encrypt", "--key-file", key_file, "-o", str(mount / "out.cb3"), str(src))
        assert r.returncode == 3, r.stderr
        assert b"No space left on device" in r.stderr
        assert list(mount.iterdir()) == []
        small = tmp_path / "small.cb3"
        assert cb3_cli("encrypt", "--key-file", key_file, "-o", str(small), str(src)).returncode == 0
        r = cb3_cli("decrypt", "--key-file", key_file, "-o", str(mount / "out"), str(small))
        assert r.returncode == 3 and list(mount.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mount)], check=True)


# The test runs a 256 MiB sparse file (the bench runs 2 GiB: python -m cb3 bench).
SPARSE_SIZE = 256 << 20
RSS_WRAPPER = textwrap.dedent(
    """
    import json, resource, subprocess, sys
    status = subprocess.run(sys.argv[1:]).returncode
    print(json.dumps([status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024]))
    """
)


def run_measured(*args: str) -> tuple[int, int]:
    """Exit status and peak RSS (bytes) of `python -m cb3 ARGS`."""
    out = subprocess.run(
        [sys.executable, "-c", RSS_WRAPPER, sys.executable, "-P", "-m", "cb3", *args],
        capture_output=True, check=True, timeout=600,
    )
    status, rss = json.loads(out.stdout.splitlines()[-1])
    return status, rss


@pytest.mark.slow
def test_sparse_file_round_trip_in_bounded_memory(tmp_path: Path, key_file: str) -> None:
    src, enc, dec = tmp_path / "sparse", tmp_path / "sparse.cb3", tmp_path / "sparse.out"
    with open(src, "wb") as f:
        f.truncate(SPARSE_SIZE)
        f.seek(SPARSE_SIZE // 2)
        f.write(b"middle")
    baseline = run_measured("--cflags")[1]  # the interpreter with cb3 imported
    status, encrypt_rss = run_measured("encrypt", "--key-file", key_file, "-o", str(enc), str(src))
    assert status == 0
    assert enc.stat().st_size == 27 + SPARSE_SIZE + 32 * (SPARSE_SIZE // 65536)
    src.unlink()
    status, decrypt_rss = run_measured("decrypt", "--key-file", key_file, "-o", str(dec), str(enc))
    assert status == 0
    enc.unlink()
    assert dec.stat().st_size == SPARSE_SIZE
    with open(dec, "rb") as f:
        f.seek(SPARSE_SIZE // 2 - 3)
        assert f.read(10) == b"\0\0\0middle\0"
        f.seek(0)
        zero = bytes(1 << 20)
        for offset in range(0, SPARSE_SIZE, 1 << 20):
            block = f.read(1 << 20)
            assert block == zero or offset == SPARSE_SIZE // 2
    # A few batches of 256 KiB of plaintext and ciphertext, not the file.
    # PyPy adds its JIT's code and a collector that frees late (measured
    # there: about +19 MiB; a PyPy that held on to every written buffer
    # would be at +800 MiB, see cb3/chunked/fileio.py COLLECT_STEP).
    bound = (48 if sys.implementation.name == "pypy" else 16) << 20
    for rss in (encrypt_rss, decrypt_rss):
        assert rss - baseline < bound, (rss, baseline)
    from helpers import MEASUREMENTS

    MEASUREMENTS["cli 256 MiB sparse round trip, peak RSS above `python -m cb3 --cflags`"] = (
        f"encrypt +{(encrypt_rss - baseline) / 2**20:.1f} MiB, decrypt +{(decrypt_rss - baseline) / 2**20:.1f} MiB "
        f"(baseline {baseline / 2**20:.1f} MiB)"
    )


@pytest.mark.threads  # --threads 2: deselected under HPy debug mode only (pyproject.toml)
def test_threads_between_regular_files(tmp_path: Path, key_file: str) -> None:
    """--threads 2 between regular files (the pread/pwrite pipeline, also for
    stdout redirected to a file): the same bytes, and a chunk that fails in a
    later batch leaves no output and exit status 1."""
    src, enc, dec = tmp_path / "in", tmp_path / "in.cb3", tmp_path / "out"
    data = os.urandom(3 * fileio.BATCH_BYTES_PER_THREAD + 1000)
    src.write_bytes(data)
    with open(enc, "wb") as redirected:
        r = subprocess.run([sys.executable, "-P", "-m", "cb3", "encrypt", "--key-file", key_file, "--threads", "2",
                            str(src)], stdout=redirected, stderr=subprocess.PIPE, timeout=600)
    assert r.returncode == 0, r.stderr
    assert cb3.DecryptingReader(open(enc, "rb"), KEY).read() == data
    bad = bytearray(enc.read_bytes())
    bad[27 + 9 * (65536 + 32)] ^= 1  # chunk 9: in the 3rd of 4 batches (4 chunks each)
    enc.write_bytes(bad)
    r = cb3_cli("decrypt", "--key-file", key_file, "--threads", "2", "-o", str(dec), str(enc))
    assert r.returncode == 1 and b"chunk 9 failed" in r.stderr and b"no output written" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "in.cb3", "key"]


# ---- hardening: outputs that are not regular files, same file, signals, keys, argv bytes


def test_force_output_to_a_fifo_writes_in_place(tmp_path: Path, key_file: str) -> None:
    """A device or FIFO is written in place, as stdout is: renaming a new file
    over it would replace the node (`decrypt --force -o /dev/null` as root)."""
    data = os.urandom(200_000)
    enc = tmp_path / "in.cb3"
    cb3.encrypt_file(KEY, io.BytesIO(data), str(enc))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def drain() -> None:
        with open(fifo, "rb") as f:
            received.append(f.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    r = cb3_cli("decrypt", "--key-file", key_file, "--force", "-o", str(fifo), str(enc))
    # (Were it replaced, the reader would stay blocked on the old node: a daemon thread.)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert received == [data]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "in.cb3", "key"]  # no temporary left


def test_force_output_through_a_symlink_replaces_its_target(tmp_path: Path, key_file: str) -> None:
    src, target, link = tmp_path / "in", tmp_path / "target", tmp_path / "link"
    src.write_bytes(b"plaintext")
    target.write_bytes(b"old")
    link.symlink_to(target)
    r = cb3_cli("encrypt", "--key-file", key_file, "-o", str(link), str(src))
    assert r.returncode == 2 and b"exists" in r.stderr and target.read_bytes() == b"old"
    r = cb3_cli("encrypt", "--key-file", key_file, "--force", "-o", str(link), str(src))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)  # the link stays, as with cp
    assert cb3.DecryptingReader(open(target, "rb"), KEY).read() == b"plaintext"


def test_same_file_in_and_out_is_a_usage_error(tmp_path: Path, key_file: str) -> None:
    src = tmp_path / "f"
    original = os.urandom(100_000)
    src.write_bytes(original)
    with open(src, "ab") as appended:  # python -m cb3 encrypt f >> f
        r = subprocess.run([sys.executable, "-P", "-m", "cb3", "encrypt", "--key-file", key_file, str(src)],
                           stdout=appended, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 2 and b"same file" in r.stderr, r.stderr
    r = cb3_cli("encrypt", "--key-file", key_file, "--force", "-o", str(src), str(src))
    assert r.returncode == 2 and b"same file" in r.stderr
    assert src.read_bytes() == original


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_signals_leave_no_temporary_plaintext(tmp_path: Path, key_file: str, signame: str) -> None:
    """decrypt -o OUT from a pipe that stalls after some verified chunks: the
    signal must remove the hidden temporary file holding their plaintext."""
    data = os.urandom(4 << 20)
    stream = io.BytesIO()
    cb3.encrypt_file(KEY, io.BytesIO(data), stream)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-P", "-m", "cb3", "decrypt", "--key-file", key_file, "-o", str(out)],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                            preexec_fn=signals_at_default)
    assert proc.stdin is not None
    proc.stdin.write(stream.getvalue()[: 1 << 20])  # several batches, then the producer stalls
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        temps = [p for p in tmp_path.iterdir() if p.name.startswith(".cb3-")]
        if temps and temps[0].stat().st_size > 0:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("no temporary output with plaintext appeared")
    proc.send_signal(getattr(signal, signame))
    _, err = proc.communicate(timeout=60)
    expected = 130 if signame == "SIGINT" else 128 + getattr(signal, signame)
    assert proc.returncode == expected, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key"], "a temporary file with plaintext was left"


def test_key_files_group_readable_warns_text_refused(tmp_path: Path, key_file: str) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"data")
    os.chmod(key_file, 0o644)
    r = cb3_cli("encrypt", "--key-file", key_file, "-o", str(tmp_path / "o"), str(src))
    assert r.returncode == 0 and b"warning: key file" in r.stderr and b"chmod 600" in r.stderr, r.stderr
    os.chmod(key_file, 0o600)
    r = cb3_cli("encrypt", "--key-file", key_file, "-o", str(tmp_path / "p"), str(src))
    assert r.returncode == 0 and r.stderr == b""
    for name, content in [("hex16", os.urandom(16).hex().encode()), ("passphrase", b"correct horse battery staple!!!\n")]:
        assert len(content) == 32
        bad = tmp_path / name
        bad.write_bytes(content)
        bad.chmod(0o600)
        r = cb3_cli("encrypt", "--key-file", str(bad), "-o", str(tmp_path / name) + ".cb3", str(src))
        assert r.returncode == 2 and b"32 bytes of text" in r.stderr, (name, r.stderr)


def test_keygen_writes_a_private_new_key_and_never_overwrites(tmp_path: Path) -> None:
    key = tmp_path / "new.key"
    r = cb3_cli("keygen", "-o", str(key))
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    text = key.read_text()
    assert len(bytes.fromhex(text.strip())) == 32 and text.endswith("\n")
    src = tmp_path / "in"
    src.write_bytes(b"hello")
    r = cb3_cli("encrypt", "--key-file", str(key), "-o", str(tmp_path / "in.cb3"), str(src))
    assert r.returncode == 0 and r.stderr == b""
    r = cb3_cli("keygen", "-o", str(key))
    assert r.returncode == 2 and b"exists" in r.stderr and key.read_text() == text
    assert cb3_cli("keygen", "-o", str(tmp_path / "other")).returncode == 0
    assert (tmp_path / "other").read_text() != text


def test_associated_data_not_utf8_is_a_usage_error(tmp_path: Path, key_file: str) -> None:
    src = tmp_path / "in"
    src.write_bytes(b"data")
    argv = [os.fsencode(sys.executable), b"-P", b"-m", b"cb3", b"encrypt", b"--key-file", os.fsencode(key_file),
            b"--associated-data", b"caf\xe9", b"-o", os.fsencode(str(tmp_path / "o")), os.fsencode(str(src))]
    r = subprocess.run(argv, capture_output=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert b"--associated-data must be valid UTF-8" in r.stderr and b"Traceback" not in r.stderr


# ---- passphrases (cb3/cli/passphrase.py, docs/passphrase-format.md) ---------------------

#: The cheapest valid derivation, as options.
FAST_OPTIONS = ["--passes", "1", "--memory", "64", "--lanes", "1"]


def test_passphrase_round_trip_from_each_scripted_source(tmp_path: Path) -> None:
    src, enc = tmp_path / "in", tmp_path / "in.cb3"
    data = os.urandom(200_000)
    src.write_bytes(data)
    r = cb3_cli("encrypt", "--passphrase-env", "CB3_TEST_PASS", *FAST_OPTIONS, "-o", str(enc), str(src),
                env={"CB3_TEST_PASS": "tr\u00e8s secret"})
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    assert enc.read_bytes()[:9] == b"CB3PASS\x01\x01"
    assert cb3.DecryptingReader(io.BytesIO(enc.read_bytes()), passphrase="tr\u00e8s secret").read() == data
    pw = tmp_path / "pw"
    for i, content in enumerate(["tr\u00e8s secret\n".encode(), "tr\u00e8s secret\r\n".encode(),
                                 "tr\u00e8s secret".encode(), "tre\u0300s secret\n".encode()]):  # NFD too
        pw.write_bytes(content)
        out = tmp_path / f"out{i}"
        r = cb3_cli("decrypt", "--passphrase-file", str(pw), "-o", str(out), str(enc))
        assert r.returncode == 0 and out.read_bytes() == data, (content, r.stderr)
    read_end, write_end = os.pipe()
    os.write(write_end, "tr\u00e8s secret\n".encode())
    os.close(write_end)
    try:
        r = subprocess.run([sys.executable, "-P", "-m", "cb3", "decrypt", "--passphrase-fd", str(read_end),
                            str(enc)], capture_output=True, pass_fds=(read_end,), timeout=600)
    finally:
        os.close(read_end)
    assert r.returncode == 0 and r.stdout == data, r.stderr
    pw.write_bytes(b"tr\xc3\xa8s secret\n\n")  # only one newline is removed
    r = cb3_cli("decrypt", "--passphrase-file", str(pw), "-o", str(tmp_path / "two"), str(enc))
    assert r.returncode == 1 and b"wrong passphrase, or a modified header" in r.stderr
    assert not (tmp_path / "two").exists()


def test_passphrase_sources_that_are_refused(tmp_path: Path, key_file: str) -> None:
    src, enc = tmp_path / "in", tmp_path / "in.cb3"
    src.write_bytes(b"data")
    cb3.encrypt_file(src=src, dst=enc, passphrase="pw", time_cost=1, memory_cost=64, parallelism=1)
    empty, newline, latin1 = tmp_path / "empty", tmp_path / "newline", tmp_path / "latin1"
    empty.write_bytes(b"")
    newline.write_bytes(b"\n")
    latin1.write_bytes(b"caf\xe9\n")
    for args, message in [
        (["--passphrase-file", str(empty)], b"is empty"),
        (["--passphrase-file", str(newline)], b"is empty"),
        (["--passphrase-file", str(latin1)], b"is not UTF-8 text"),
        (["--passphrase-file", str(tmp_path)], b"Is a directory"),
        (["--passphrase-file", str(tmp_path / "missing")], b"cannot read --passphrase-file"),
        (["--passphrase-env", "CB3_NOT_SET_ANYWHERE"], b"is not set"),
        (["--passphrase-fd", "97"], b"cannot read --passphrase-fd 97"),
        (["--passphrase-fd", "0"], b"stdin, which is the input"),
        (["--passphrase"], b"no terminal to ask for the passphrase"),
        (["--passphrase", "secret"], b"unrecognized arguments"),
        (["--key-env", "X", "--passphrase-env", "Y"], b"exclude each other"),
        (["--key-file", key_file, "--passphrase-env", "Y"], b"is not passphrase-protected"),
    ]:
        for command, target in (("encrypt", src), ("decrypt", enc)):
            if args == ["--passphrase-fd", "0"]:
                target = Path("-")
            r = subprocess.run([sys.executable, "-P", "-m", "cb3", command, *args, "-o", str(tmp_path / "o"),
                                str(target)], capture_output=True, stdin=subprocess.DEVNULL, start_new_session=True,
                               env={**os.environ, "X": KEY.hex()}, timeout=600)
            assert r.returncode == 2, (command, args, r.stderr)
            assert message in r.stderr and b"Traceback" not in r.stderr, (command, args, r.stderr)
            assert not (tmp_path / "o").exists()
    for command, target, message in [("encrypt", src, b"a key (--key-file, --key-env) or a passphrase"),
                                     ("decrypt", enc, b"no terminal to ask for the passphrase")]:
        r = subprocess.run([sys.executable, "-P", "-m", "cb3", command, "-o", str(tmp_path / "o"), str(target)],
                           capture_output=True, stdin=subprocess.DEVNULL, start_new_session=True, timeout=600)
        assert r.returncode == 2 and message in r.stderr, (command, r.stderr)
    r = cb3_cli("encrypt", "--passphrase-env", "P", "--memory", "31", "--lanes", "4", "-o", str(tmp_path / "o"),
                str(src), env={"P": "pw"})
    assert r.returncode == 2 and b"memory_cost" in r.stderr and not (tmp_path / "o").exists(), r.stderr
    r = cb3_cli("decrypt", "--key-file", key_file, "-o", str(tmp_path / "o"), str(enc))
    assert r.returncode == 1 and b"passphrase-protected file" in r.stderr
    key_stream = tmp_path / "key.cb3"
    cb3.encrypt_file(KEY, src, key_stream)
    r = cb3_cli("decrypt", "--passphrase-env", "P", "-o", str(tmp_path / "o"), str(key_stream), env={"P": "pw"})
    assert r.returncode == 2 and b"a stream under a key" in r.stderr


def test_passphrase_limits_name_the_option_that_raises_them(tmp_path: Path) -> None:
    src, enc = tmp_path / "in", tmp_path / "in.cb3"
    src.write_bytes(b"data")
    r = cb3_cli("encrypt", "--passphrase-env", "P", "--passes", "2", "--memory", "256", "--lanes", "2",
                "-o", str(enc), str(src), env={"P": "pw"})
    assert r.returncode == 0, r.stderr
    for option, value in [("--max-passes", "2"), ("--max-memory", "256"), ("--max-lanes", "2")]:
        low = str(int(value) - 1)
        r = cb3_cli("decrypt", "--passphrase-env", "P", option, low, "-o", str(tmp_path / "o"), str(enc),
                    env={"P": "pw"})
        assert r.returncode == 1 and f"{option} {value} to allow it".encode() in r.stderr, r.stderr
        assert not (tmp_path / "o").exists()
    r = cb3_cli("decrypt", "--passphrase-env", "P", "--max-memory", "256K", "--max-passes", "2", "-o",
                str(tmp_path / "o"), str(enc), env={"P": "pw"})
    assert r.returncode == 0 and (tmp_path / "o").read_bytes() == b"data", r.stderr
    claims = tmp_path / "claims-4-tib"
    claims.write_bytes(b"CB3PASS\x01\x01\x01" + bytes([255] * 8) + bytes([255, 16]) + bytes(80))
    started = time.monotonic()
    r = cb3_cli("decrypt", "--passphrase-env", "P", "-o", str(tmp_path / "p"), str(claims), env={"P": "pw"})
    assert r.returncode == 1 and b"--max-" in r.stderr and not (tmp_path / "p").exists(), r.stderr
    assert time.monotonic() - started < 30


def test_passphrase_key_file_unlocked_once_serves_the_file_and_passwd_rewraps(tmp_path: Path) -> None:
    key_file, pw, new = tmp_path / "backup.key", tmp_path / "pw", tmp_path / "new"
    pw.write_text("old passphrase\n")
    new.write_text("new passphrase\n")
    r = cb3_cli("keygen", "--passphrase-file", str(pw), *FAST_OPTIONS, "-o", str(key_file))
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and key_file.read_bytes()[:9] == b"CB3PASS\x01\x02"
    key = cb3.unlock_key_file(key_file, "old passphrase")
    r = cb3_cli("keygen", "--passphrase-file", str(pw), "-o", str(key_file))
    assert r.returncode == 2 and b"exists" in r.stderr and cb3.unlock_key_file(key_file, "old passphrase") == key
    data = os.urandom(5000)
    (tmp_path / "in").write_bytes(data)
    enc = tmp_path / "in.cb3"
    r = cb3_cli("encrypt", "--key-file", str(key_file), "--passphrase-file", str(pw), "-o", str(enc),
                str(tmp_path / "in"))
    assert r.returncode == 0 and enc.read_bytes()[:7] == b"CB3STRM", r.stderr  # a stream under the key
    assert cb3.DecryptingReader(io.BytesIO(enc.read_bytes()), key).read() == data
    r = cb3_cli("decrypt", "--key-file", str(key_file), "--passphrase-file", str(new), "-o", str(tmp_path / "x"),
                str(enc))
    assert r.returncode == 1 and b"wrong passphrase, or a modified key file" in r.stderr
    before = key_file.read_bytes()
    r = cb3_cli("passwd", str(key_file), "--passphrase-file", str(new), "--new-passphrase-file", str(pw))
    assert r.returncode == 1 and key_file.read_bytes() == before, r.stderr
    r = cb3_cli("passwd", str(key_file), "--passphrase-file", str(pw), "--new-passphrase-file", str(new),
                *FAST_OPTIONS)
    assert r.returncode == 0 and key_file.read_bytes() != before, r.stderr
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    r = cb3_cli("decrypt", "--key-file", str(key_file), "--passphrase-env", "P", "-o", str(tmp_path / "out"),
                str(enc), env={"P": "new passphrase"})
    assert r.returncode == 0 and (tmp_path / "out").read_bytes() == data, r.stderr
    assert cb3.unlock_key_file(key_file, "new passphrase") == key
    r = cb3_cli("passwd", str(tmp_path / "in"), "--passphrase-file", str(pw), "--new-passphrase-file", str(new))
    assert r.returncode == 1 and b"not a cb3 passphrase-protected key file" in r.stderr


def _on_a_terminal(args: list[str], answers: list[bytes], cwd: Path) -> tuple[int, bytes]:
    """Runs `python -m cb3 ARGS` with a pseudo-terminal as its controlling
    terminal, typing each answer after a prompt; (exit status, what the
    terminal showed)."""
    import pty

    pid, master = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty
        os.chdir(cwd)
        os.execv(sys.executable, [sys.executable, "-P", "-m", "cb3", *args])
    shown = b""
    pending = list(answers)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            piece = os.read(master, 1024)
        except OSError:  # the child closed the terminal (EIO on Linux)
            break
        if not piece:
            break
        shown += piece
        if pending and shown.count(b": ") > len(answers) - len(pending) and shown.rstrip().endswith(b":"):
            os.write(master, pending.pop(0) + b"\n")
    _, status = os.waitpid(pid, 0)
    os.close(master)
    return os.waitstatus_to_exitcode(status), shown


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs a pseudo-terminal")
def test_passphrase_prompts_on_the_terminal_without_echo(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(b"typed at the terminal")
    status, shown = _on_a_terminal(["encrypt", "--passphrase", *FAST_OPTIONS, "-o", "in.cb3", "in"],
                                   [b"hunter2 hunter2", b"hunter2 hunter2"], tmp_path)
    assert status == 0, shown
    assert shown.count(b"Passphrase") == 2 and b"hunter2" not in shown, shown  # asked twice, never echoed
    assert cb3.DecryptingReader(io.BytesIO((tmp_path / "in.cb3").read_bytes()),
                                passphrase="hunter2 hunter2").read() == b"typed at the terminal"
    status, shown = _on_a_terminal(["decrypt", "-o", "out", "in.cb3"], [b"hunter2 hunter2"], tmp_path)
    assert status == 0 and shown.count(b"Passphrase") == 1 and b"hunter2" not in shown, shown
    assert (tmp_path / "out").read_bytes() == b"typed at the terminal"
    status, shown = _on_a_terminal(["encrypt", "--passphrase", "-o", "x.cb3", "in"], [b"one", b"two"], tmp_path)
    assert status == 2 and b"the two passphrases differ" in shown and not (tmp_path / "x.cb3").exists(), shown
    status, shown = _on_a_terminal(["encrypt", "--passphrase", "-o", "x.cb3", "in"], [b""], tmp_path)
    assert status == 2 and b"empty passphrase refused" in shown and not (tmp_path / "x.cb3").exists(), shown
    status, shown = _on_a_terminal(["decrypt", "-o", "x", "in.cb3"], [b"\x04"], tmp_path)  # Ctrl-D
    assert status == 2 and b"no passphrase given" in shown and b"Traceback" not in shown, shown
    status, shown = _on_a_terminal(["keygen", "--passphrase", *FAST_OPTIONS, "-o", "k"], [b"kk", b"kk"], tmp_path)
    assert status == 0 and cb3.unlock_key_file(tmp_path / "k", "kk"), shown
    status, shown = _on_a_terminal(["decrypt", "--key-file", "k", "-o", "out2", "in.cb3"], [b"kk"], tmp_path)
    assert status == 1 and shown.count(b"Passphrase for k") == 1, shown  # the key file's; in.cb3 is no key stream


def test_ctrl_c_during_the_derivation_leaves_no_output(tmp_path: Path) -> None:
    (tmp_path / "in").write_bytes(b"data")
    proc = subprocess.Popen([sys.executable, "-P", "-m", "cb3", "encrypt", "--passphrase-env", "P", "--passes", "10",
                             "--memory", "256M", "--lanes", "1", "-o", "out", "in"], cwd=tmp_path,
                            stderr=subprocess.PIPE, env={**os.environ, "P": "pw"}, preexec_fn=signals_at_default)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not [p for p in tmp_path.iterdir() if p.name.startswith(".cb3-")]:
        time.sleep(0.01)  # the temporary output exists: the derivation is under way
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_one_key_file_derivation_serves_many_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--output-dir: a passphrase-protected key file is unlocked once (one
    derivation, its passphrase read once) for every input."""
    key_file, pw = tmp_path / "backup.key", tmp_path / "pw"
    pw.write_text("pass\n")
    cb3.write_key_file(key_file, KEY, "pass", time_cost=1, memory_cost=64, parallelism=1)
    sources = tmp_path / "src"
    sources.mkdir()
    files = {f"f{i}": os.urandom(1000 * i) for i in range(12)}
    for name, data in files.items():
        (sources / name).write_bytes(data)
    from cb3 import _cb3

    opened: list[int] = []
    real_open = _cb3.passphrase_open
    monkeypatch.setattr(_cb3, "passphrase_open", lambda *args: opened.append(1) or real_open(*args))
    enc, dec = tmp_path / "enc", tmp_path / "dec"
    enc.mkdir()
    dec.mkdir()
    with open(pw, "rb") as f:  # a descriptor gives the passphrase once: a second read would find it empty
        status = cli_files.main(["encrypt", "--key-file", str(key_file), "--passphrase-fd", str(f.fileno()),
                                 "-O", str(enc), *sorted(str(p) for p in sources.iterdir())])
    assert status == 0 and len(opened) == 1
    assert sorted(p.name for p in enc.iterdir()) == sorted(f"{name}.cb3" for name in files)
    assert all((enc / f"{name}.cb3").read_bytes()[:7] == b"CB3STRM" for name in files)
    status = cli_files.main(["decrypt", "--key-file", str(key_file), "--passphrase-file", str(pw), "-O", str(dec),
                             *sorted(str(p) for p in enc.iterdir())])
    assert status == 0 and len(opened) == 2
    assert {p.name: p.read_bytes() for p in dec.iterdir()} == files
    r = cb3_cli("decrypt", "--key-file", str(key_file), "--passphrase-file", str(pw), str(sources / "f1"),
                str(sources / "f2"))
    assert r.returncode == 2 and b"several inputs need --output-dir" in r.stderr
    r = cb3_cli("decrypt", "--key-file", str(key_file), "--passphrase-file", str(pw), "-O", str(dec),
                str(sources / "f1"))
    assert r.returncode == 2 and b"does not end in .cb3" in r.stderr


def test_help_and_messages_say_what_each_command_does(tmp_path: Path, key_file: str) -> None:
    """decrypt's --force says nothing about ciphertext; a missing input is
    named with a colon before the system's message; the mode of the files
    written is said in the help and is 0600 whatever the input's."""
    encrypt_help = cb3_cli("encrypt", "--help").stdout.decode()
    decrypt_help = cb3_cli("decrypt", "--help").stdout.decode()
    assert "ciphertext to a terminal" in " ".join(encrypt_help.split())
    assert "ciphertext" not in decrypt_help
    assert "mode 0600" in " ".join(decrypt_help.split()) and "mode 0600" in " ".join(encrypt_help.split())
    missing = tmp_path / "nonexist"
    r = cb3_cli("encrypt", "--key-file", key_file, "-o", str(tmp_path / "out"), str(missing))
    assert r.returncode == 3
    assert f"cb3 encrypt: {missing}: No such file or directory" in r.stderr.decode()
    src = tmp_path / "shared.txt"
    src.write_bytes(b"meet at noon\n")
    src.chmod(0o644)
    assert cb3_cli("encrypt", "--key-file", key_file, "-o", str(tmp_path / "s.cb3"), str(src)).returncode == 0
    assert cb3_cli("decrypt", "--key-file", key_file, "-o", str(tmp_path / "s.txt"), str(tmp_path / "s.cb3")).returncode == 0
    for written in (tmp_path / "s.cb3", tmp_path / "s.txt"):
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
