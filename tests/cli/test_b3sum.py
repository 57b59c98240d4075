"""cb3.cli.b3sum: the b3sum-compatible command.

Known-digest tests always run (in-process through cb3.cli.b3sum.main and as
`python -m cb3.cli.b3sum`); the byte-for-byte comparison with Debian's `b3sum`
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
from cb3.cli.b3sum import PROGRESS_MIN_SIZE, main

reference = pytest.importorskip("blake3")

# `python -m cb3.cli.b3sum` in a subprocess must import the cb3 under test: the
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
        [sys.executable, "-m", "cb3.cli.b3sum", "hello", "-"],
        input=b"abc",
        capture_output=True,
        env={**os.environ, "PYTHONPATH": CB3_PARENT},
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == f"{HELLO}  hello\n{ABC}  -\n".encode()


def test_broken_pipe_is_quiet(files):
    process = subprocess.Popen(
        [sys.executable, "-m", "cb3.cli.b3sum", "--no-names", "-l", "100000000", "hello"],
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
            [sys.executable, "-m", "cb3.cli.b3sum", "large"],
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
        [sys.executable, "-m", "cb3.cli.b3sum", "large"],
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
        [sys.executable, "-m", "cb3.cli.b3sum", *argv],
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
        [sys.executable, "-m", "cb3.cli.b3sum", "hello", "empty", "big", "back\\slash"],
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


# ---- --check, rule by rule (upstream b3sum/what_does_check_do.md) ----------
#
# Rules 8 and 9 apply on Windows only; cb3's b3sum applies none of them
# elsewhere, as upstream.

# Line breaks for str.splitlines() that are not a newline: honest file names
# may hold them, and b3sum writes them unescaped.
NOT_NEWLINES = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def test_check_rule_1_2_any_file_hashes_and_non_unicode_becomes_fffd(files, capsysbinary, monkeypatch):
    """Rules 1-2: any path can be hashed; its non-UTF-8 bytes print as U+FFFD."""
    name = os.fsdecode(b"y\xffy")
    Path(name).write_bytes(b"hello")
    code, out, err = run(capsysbinary, monkeypatch, [name])
    assert (code, err) == (0, "")
    assert out == f"{HELLO}  y\ufffdy\n".encode()
    out.decode("utf-8")  # a checkfile is always valid UTF-8


def test_check_rule_3_4_escapes_and_the_leading_backslash(files, capsysbinary, monkeypatch):
    """Rules 3-4: backslash and newline (and, as upstream's code and the
    prose of the document, carriage return) are escaped, and only lines that
    hold an escape start with a backslash; in --tag lines too."""
    names = {"a\\b": "a\\\\b", "a\nb": "a\\nb", "a\rb": "a\\rb", "plain": "plain"}
    for name in names:
        Path(name).write_bytes(b"hello")
    for name, shown in names.items():
        prefix = "\\" if shown != name else ""
        assert run(capsysbinary, monkeypatch, [name])[1] == f"{prefix}{HELLO}  {shown}\n".encode()
        assert run(capsysbinary, monkeypatch, ["--tag", name])[1] == f"{prefix}BLAKE3 ({shown}) = {HELLO}\n".encode()
    # And back: each escaped line checks OK.
    sums = run(capsysbinary, monkeypatch, list(names))[1]
    Path("sums").write_bytes(sums)
    code, out, err = run(capsysbinary, monkeypatch, ["--check", "sums"])
    assert (code, err) == (0, "")
    assert out == "".join(f"{chr(92) if s != n else ''}{s}: OK\n" for n, s in names.items()).encode()


@pytest.mark.parametrize("char", NOT_NEWLINES, ids=[f"U+{ord(c):04X}" for c in NOT_NEWLINES])
def test_check_rule_5_names_with_other_line_breaks_verify(files, capsysbinary, monkeypatch, char):
    """Rule 5: lines are separated by a newline only, so an honest name that
    holds VT, FF, FS, GS, RS, NEL, U+2028 or U+2029 (written unescaped)
    checks OK; str.splitlines() broke such a line in two."""
    name = f"x{char}y"
    Path(name).write_bytes(b"hello")
    sums = run(capsysbinary, monkeypatch, [name])[1]
    assert sums == f"{HELLO}  {name}\n".encode()
    Path("sums").write_bytes(sums)
    assert run(capsysbinary, monkeypatch, ["--check", "sums"]) == (0, f"{name}: OK\n".encode(), "")
    Path(name).write_bytes(b"changed")
    assert run(capsysbinary, monkeypatch, ["--check", "sums"])[:2] == (1, f"{name}: FAILED\n".encode())


@pytest.mark.parametrize("char", NOT_NEWLINES, ids=[f"U+{ord(c):04X}" for c in NOT_NEWLINES])
def test_check_rule_5_planted_name_cannot_inject_check_lines(files, capsysbinary, monkeypatch, char):
    """A planted file whose name carries a second check line. Its own line
    must verify the planted file; splitting inside the name instead checked
    two decoy files (prepared to match) and never the planted one, so
    --check passed after the planted file was modified."""
    decoy = b"decoy content"
    planted = f"p{char}{reference.blake3(decoy).hexdigest()}  q"
    Path(planted).write_bytes(b"original")
    Path("p").write_bytes(b"original")  # matches the first half of the split line
    Path("q").write_bytes(decoy)  # matches the injected line
    sums = run(capsysbinary, monkeypatch, [planted])[1]
    Path("sums").write_bytes(sums)
    assert run(capsysbinary, monkeypatch, ["--check", "sums"]) == (0, f"{planted}: OK\n".encode(), "")
    Path(planted).write_bytes(b"modified after the checkfile was written")
    code, out, _ = run(capsysbinary, monkeypatch, ["--check", "sums"])
    assert (code, out) == (1, f"{planted}: FAILED\n".encode())


@needs_b3sum
def test_check_planted_name_same_as_b3sum(files):
    """Debian's b3sum reports the modified planted file FAILED; so do we."""
    decoy = b"decoy content"
    planted = f"p\x0b{reference.blake3(decoy).hexdigest()}  q"
    Path(planted).write_bytes(b"original")
    Path("p").write_bytes(b"original")
    Path("q").write_bytes(decoy)
    Path("sums").write_bytes(subprocess.run([B3SUM, planted], capture_output=True, check=True).stdout)
    Path(planted).write_bytes(b"modified")
    ours, theirs = both(["--check", "sums"])
    assert ours == theirs and ours[0] == 1


def test_check_rule_5_newline_only_crlf_and_last_line(files, capsysbinary, monkeypatch):
    """Rule 5: a trailing CR (CRLF files) is trimmed, a last line without a
    newline counts, and a CR alone does not end a line."""
    Path("sums").write_bytes(f"{HELLO}  hello\r\n{EMPTY}  empty".encode())
    assert run(capsysbinary, monkeypatch, ["--check", "sums"]) == (0, b"hello: OK\nempty: OK\n", "")
    Path("sums").write_bytes(f"{HELLO}  hello\r{EMPTY}  empty\n".encode())
    code, out, _ = run(capsysbinary, monkeypatch, ["--check", "sums"])
    assert code == 1 and out.startswith(f"hello\r{EMPTY}  empty: FAILED (".encode())


def test_check_rule_5_invalid_utf8_is_an_error(files, capsysbinary, monkeypatch):
    """Rule 5: invalid UTF-8 is an error; as upstream reads line by line,
    the lines before it are checked first."""
    Path("sums").write_bytes(f"{HELLO}  hello\n".encode() + b"\xff\xfe  x\n" + f"{EMPTY}  empty\n".encode())
    code, out, err = run(capsysbinary, monkeypatch, ["--check", "sums"])
    assert code == 1
    assert out == b"hello: OK\n"
    assert "Error: stream did not contain valid UTF-8" in err


def test_check_rule_6_unescaping(files, capsysbinary, monkeypatch):
    """Rule 6: a leading backslash unescapes the path (\\\\, \\n and, as
    upstream's code, \\r); any other escape, or a lone trailing backslash,
    is an error. Without the leading backslash, backslashes are literal."""
    Path("a\\nb").write_bytes(b"hello")  # a literal backslash and n
    Path("a\nb").write_bytes(b"")  # a real newline
    Path("sums").write_bytes(f"{HELLO}  a\\nb\n\\{EMPTY}  a\\nb\n".encode())
    assert run(capsysbinary, monkeypatch, ["--check", "sums"]) == (0, b"a\\nb: OK\n\\a\\nb: OK\n", "")
    for bad in (f"\\{HELLO}  a\\tb", f"\\{HELLO}  a\\", f"\\{HELLO}  a\\x41"):
        Path("sums").write_text(bad + "\n")
        code, out, err = run(capsysbinary, monkeypatch, ["--check", "sums"])
        assert (code, out) == (1, b""), bad
        assert "b3sum: Invalid backslash escape" in err, bad


def test_check_rule_7_replacement_and_nul_characters(files, capsysbinary, monkeypatch):
    """Rule 7: a path holding U+FFFD or U+0000 (after unescaping) fails."""
    Path("y\ufffdy").write_bytes(b"hello")
    for line, message in (
        (f"{HELLO}  y\ufffdy", "Unicode replacement character in path"),
        (f"{HELLO}  y\x00y", "Null character in path"),
    ):
        Path("sums").write_bytes(f"{line}\n".encode())
        code, out, err = run(capsysbinary, monkeypatch, ["--check", "sums"])
        assert (code, out) == (1, b"")
        assert f"b3sum: {message}" in err


def test_check_hash_length_counts_bytes(files, capsysbinary, monkeypatch):
    """The hash field is 64 bytes of lowercase hex: 63 characters that are
    64 UTF-8 bytes are invalid hex, not a wrong length (as upstream)."""
    Path("sums").write_bytes(f"{HELLO[:62]}\u00e9  hello\n".encode())
    code, _, err = run(capsysbinary, monkeypatch, ["--check", "sums"])
    assert code == 1 and "b3sum: Invalid hex" in err
