"""cb3.b3sum: the b3sum-compatible command.

Known-digest tests always run (in-process through cb3.b3sum.main and as
`python -m cb3.b3sum`); the byte-for-byte comparison with Debian's `b3sum`
runs only where that command is installed (apt-get install b3sum).
"""

import io
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cb3
from cb3.b3sum import PROGRESS_MIN_SIZE, main

reference = pytest.importorskip("blake3")

# `python -m cb3.b3sum` in a subprocess must import the cb3 under test: the
# source tree for an editable install, site-packages for an installed one (a
# source tree without a built extension would shadow it).
CB3_PARENT = str(Path(cb3.__file__).resolve().parent.parent)
# Known BLAKE3 digests (the first case is the official vector for empty input).
EMPTY = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
HELLO = "ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f"
ABC = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
ZERO_KEY_HELLO = reference.blake3(b"hello", key=bytes(32)).hexdigest()


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("hello").write_bytes(b"hello")
    Path("empty").write_bytes(b"")
    Path("big").write_bytes(os.urandom(300_000))
    return tmp_path


def run(capsysbinary, monkeypatch, argv, stdin=b""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(argv)
    captured = capsysbinary.readouterr()
    return code, captured.out, captured.err.decode()


def test_known_digests(files, capsysbinary, monkeypatch):
    assert Path("hello").read_bytes() == b"hello"
    code, out, err = run(capsysbinary, monkeypatch, ["hello", "empty"])
    assert (code, err) == (0, "")
    assert out == f"{HELLO}  hello\n{EMPTY}  empty\n".encode()
    big = reference.blake3(Path("big").read_bytes()).hexdigest()
    assert run(capsysbinary, monkeypatch, ["big"])[1] == f"{big}  big\n".encode()
    assert run(capsysbinary, monkeypatch, ["--num-threads", "1", "big"])[1] == f"{big}  big\n".encode()
    assert run(capsysbinary, monkeypatch, ["--num-threads", "3", "--no-mmap", "big"])[1] == f"{big}  big\n".encode()


def test_stdin(files, capsysbinary, monkeypatch):
    assert run(capsysbinary, monkeypatch, [], stdin=b"abc") == (0, f"{ABC}  -\n".encode(), "")
    assert run(capsysbinary, monkeypatch, ["-"], stdin=b"abc") == (0, f"{ABC}  -\n".encode(), "")
    data = os.urandom(3 * 1024 * 1024 + 5)
    expected = reference.blake3(data).hexdigest()
    assert run(capsysbinary, monkeypatch, ["--no-names"], stdin=data)[1] == f"{expected}\n".encode()


def test_output_options(files, capsysbinary, monkeypatch):
    long = reference.blake3(b"hello").hexdigest(100)
    assert run(capsysbinary, monkeypatch, ["--length", "100", "hello"])[1] == f"{long}  hello\n".encode()
    assert run(capsysbinary, monkeypatch, ["-l", "0", "hello"])[1] == b"  hello\n"
    assert run(capsysbinary, monkeypatch, ["--seek", "5", "-l", "10", "hello"])[1] == f"{long[10:30]}  hello\n".encode()
    assert run(capsysbinary, monkeypatch, ["--no-names", "hello", "empty"])[1] == f"{HELLO}\n{EMPTY}\n".encode()
    assert run(capsysbinary, monkeypatch, ["--tag", "hello"])[1] == f"BLAKE3 (hello) = {HELLO}\n".encode()
    assert run(capsysbinary, monkeypatch, ["--raw", "hello"])[1] == bytes.fromhex(HELLO)
    assert run(capsysbinary, monkeypatch, ["--raw", "-l", "3", "hello"])[1] == bytes.fromhex(HELLO)[:3]
    code, out, err = run(capsysbinary, monkeypatch, ["--raw", "hello", "empty"])
    assert (code, out) == (1, b"") and "Only one filename" in err
    # Long outputs are streamed in pieces.
    expected = reference.blake3(b"hello").hexdigest(3 * 1024 * 1024 + 7)
    assert run(capsysbinary, monkeypatch, ["--no-names", "-l", str(3 * 1024 * 1024 + 7), "hello"])[1] == (
        expected.encode() + b"\n"
    )


def test_modes(files, capsysbinary, monkeypatch):
    code, out, err = run(capsysbinary, monkeypatch, ["--keyed", "hello"], stdin=bytes(32))
    assert (code, out, err) == (0, f"{ZERO_KEY_HELLO}  hello\n".encode(), "")
    for key in (bytes(31), bytes(33)):
        code, out, err = run(capsysbinary, monkeypatch, ["--keyed", "hello"], stdin=key)
        assert code == 1 and out == b"" and "key bytes from stdin" in err
    code, out, err = run(capsysbinary, monkeypatch, ["--keyed", "-"], stdin=bytes(32))
    assert code == 1 and "Cannot open `-` in keyed mode" in err
    derived = reference.blake3(b"hello", derive_key_context="my context").hexdigest()
    assert run(capsysbinary, monkeypatch, ["--derive-key", "my context", "hello"])[1] == f"{derived}  hello\n".encode()


def test_usage_errors(files, capsysbinary, monkeypatch):
    for argv in (
        ["--keyed"],
        ["--keyed", "--derive-key", "x", "hello"],
        ["--check", "--length", "3", "x"],
        ["--check", "--raw", "x"],
        ["--quiet", "hello"],
        ["--length", "-1", "hello"],
        ["--length", "abc", "hello"],
        ["--no-such-flag"],
    ):
        code, out, err = run(capsysbinary, monkeypatch, argv)
        assert code == 2, argv
        assert out == b"" and "usage: b3sum" in err
    code, out, _ = run(capsysbinary, monkeypatch, ["--help"])
    assert code == 0 and b"--derive-key CONTEXT" in out
    code, out, _ = run(capsysbinary, monkeypatch, ["--version"])
    assert code == 0 and out.startswith(b"b3sum ")


def test_missing_files_are_reported_and_skipped(files, capsysbinary, monkeypatch):
    code, out, err = run(capsysbinary, monkeypatch, ["missing", "hello", str(files)])
    assert code == 1
    assert out == f"{HELLO}  hello\n".encode()
    assert "b3sum: missing: No such file or directory (os error 2)" in err
    assert "Is a directory (os error 21)" in err


def test_escaped_names(files, capsysbinary, monkeypatch):
    Path("back\\slash").write_bytes(b"hello")
    Path("new\nline").write_bytes(b"hello")
    out = run(capsysbinary, monkeypatch, ["back\\slash", "new\nline"])[1]
    assert out == f"\\{HELLO}  back\\\\slash\n\\{HELLO}  new\\nline\n".encode()
    Path("sums").write_bytes(out)
    assert run(capsysbinary, monkeypatch, ["--check", "sums"])[1] == b"\\back\\\\slash: OK\n\\new\\nline: OK\n"


def test_check(files, capsysbinary, monkeypatch):
    sums = run(capsysbinary, monkeypatch, ["hello", "empty", "big"])[1]
    Path("sums").write_bytes(sums)
    assert run(capsysbinary, monkeypatch, ["--check", "sums"]) == (0, b"hello: OK\nempty: OK\nbig: OK\n", "")
    assert run(capsysbinary, monkeypatch, ["-c", "--quiet", "sums"]) == (0, b"", "")
    assert run(capsysbinary, monkeypatch, ["-c"], stdin=sums)[1] == b"hello: OK\nempty: OK\nbig: OK\n"
    assert run(capsysbinary, monkeypatch, ["-c", "sums"], stdin=b"")[0] == 0
    # CRLF checkfiles and --tag lines are accepted.
    tagged = run(capsysbinary, monkeypatch, ["--tag", "hello"])[1]
    Path("tagged").write_bytes(tagged.replace(b"\n", b"\r\n"))
    assert run(capsysbinary, monkeypatch, ["-c", "tagged"]) == (0, b"hello: OK\n", "")

    Path("big").write_bytes(b"changed")
    Path("bad").write_bytes(sums + b"garbage\n\n" + f"{HELLO}  missing\n".encode())
    code, out, err = run(capsysbinary, monkeypatch, ["-c", "bad"])
    assert code == 1
    assert out == (
        b"hello: OK\nempty: OK\nbig: FAILED\nmissing: FAILED (No such file or directory (os error 2))\n"
    )
    assert "b3sum: Invalid check line format" in err and "b3sum: Empty line" in err
    assert "WARNING: 4 computed checksums did NOT match" in err
    for line in (f"{HELLO.upper()}  hello", f"{HELLO[:-2]}  hello", f"\\{HELLO}  bad\\escape", f"{HELLO}  "):
        Path("one").write_text(line + "\n")
        code, out, err = run(capsysbinary, monkeypatch, ["-c", "one"])
        assert code == 1 and out == b"" and err.startswith("b3sum: "), line
    code, out, err = run(capsysbinary, monkeypatch, ["-c", "no-such-checkfile"])
    assert code == 1 and "No such file or directory" in err


def test_python_dash_m(files):
    result = subprocess.run(
        [sys.executable, "-m", "cb3.b3sum", "hello", "-"],
        input=b"abc",
        capture_output=True,
        env={**os.environ, "PYTHONPATH": CB3_PARENT},
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == f"{HELLO}  hello\n{ABC}  -\n".encode()


def test_broken_pipe_is_quiet(files):
    process = subprocess.Popen(
        [sys.executable, "-m", "cb3.b3sum", "--no-names", "-l", "100000000", "hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": CB3_PARENT},
    )
    assert process.stdout.read(10) == reference.blake3(b"hello").hexdigest(5).encode()
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait() == 1
    assert b"Traceback" not in stderr and b"BrokenPipe" not in stderr


def test_progress_bar_on_a_terminal(files):
    # A sparse file just over the threshold; stderr is a pseudo-terminal.
    big = files / "large"
    with open(big, "wb") as f:
        f.truncate(PROGRESS_MIN_SIZE + 1)
    expected = reference.blake3(max_threads=reference.blake3.AUTO).update_mmap(str(big)).hexdigest()
    primary, secondary = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "cb3.b3sum", "large"],
            stdout=subprocess.PIPE,
            stderr=secondary,
            env={**os.environ, "PYTHONPATH": CB3_PARENT},
            check=False,
        )
        os.close(secondary)
        secondary = -1
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
        if secondary >= 0:
            os.close(secondary)
    assert result.returncode == 0
    assert result.stdout == f"{expected}  large\n".encode()
    assert b"large [" in shown and b"100%" in shown and b"MiB/s" in shown
    assert shown.endswith(b"\r\x1b[K")
    # Not a terminal: no progress output at all.
    result = subprocess.run(
        [sys.executable, "-m", "cb3.b3sum", "large"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": CB3_PARENT},
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == f"{expected}  large\n".encode()


# ---- against Debian's b3sum ----

B3SUM = shutil.which("b3sum")
needs_b3sum = pytest.mark.skipif(B3SUM is None, reason="b3sum is not installed (apt-get install b3sum)")


def both(argv, stdin=b""):
    ours = subprocess.run(
        [sys.executable, "-m", "cb3.b3sum", *argv],
        input=stdin,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": CB3_PARENT},
        check=False,
    )
    theirs = subprocess.run([B3SUM, *argv], input=stdin, capture_output=True, check=False)
    return (ours.returncode, ours.stdout), (theirs.returncode, theirs.stdout)


@needs_b3sum
@pytest.mark.parametrize(
    "argv, stdin",
    [
        (["hello", "empty", "big"], b""),
        ([], b"from stdin"),
        (["-", "hello"], b"from stdin"),
        (["--length", "100", "hello", "big"], b""),
        (["-l", "0", "hello"], b""),
        (["--no-names", "hello", "big"], b""),
        (["--raw", "big"], b""),
        (["--raw", "--length", "1000", "hello"], b""),
        (["--derive-key", "cb3 test context", "hello", "big"], b""),
        (["--keyed", "hello", "big"], bytes(range(32))),
        (["--keyed", "hello"], bytes(31)),
        (["--num-threads", "1", "big"], b""),
        (["--num-threads", "2", "--no-mmap", "big"], b""),
        (["hello", "missing", "empty"], b""),
        (["back\\slash", "new\nline"], b""),
    ],
)
def test_same_as_b3sum(files, argv, stdin):
    Path("back\\slash").write_bytes(b"x")
    Path("new\nline").write_bytes(b"y")
    ours, theirs = both(argv, stdin)
    assert ours == theirs


@needs_b3sum
def test_check_same_as_b3sum(files):
    Path("back\\slash").write_bytes(b"x")
    theirs = subprocess.run([B3SUM, "hello", "empty", "big", "back\\slash"], capture_output=True, check=True).stdout
    ours = subprocess.run(
        [sys.executable, "-m", "cb3.b3sum", "hello", "empty", "big", "back\\slash"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": CB3_PARENT},
        check=True,
    ).stdout
    assert ours == theirs
    Path("sums").write_bytes(theirs)
    ours_result, theirs_result = both(["--check", "sums"])
    assert ours_result == theirs_result and ours_result[0] == 0
    Path("big").write_bytes(b"changed")
    Path("sums2").write_bytes(theirs + f"{HELLO}  missing\n".encode())
    ours_result, theirs_result = both(["--check", "sums2"])
    assert ours_result == theirs_result and ours_result[0] == 1
    ours_result, theirs_result = both(["-c", "--quiet", "sums2"])
    assert ours_result == theirs_result
