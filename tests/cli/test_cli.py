"""`python -m cb3`: argparse subcommands, --help/-h/--version, exit codes,
the C-API flags with and without `config`, a closed pipe, and `speed`:
its table's shape and the peers that are missing (never a figure)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cb3
import cb3.capi
from cb3.cli import COMMANDS, build_parser, main

# The subprocesses must import the cb3 under test (see test_b3sum.py).
CB3_PARENT = str(Path(cb3.__file__).resolve().parent.parent)
ENV = {**os.environ, "PYTHONPATH": CB3_PARENT}
SUBCOMMANDS = ["selftest", "speed", "b3sum", "encrypt", "decrypt", "keygen", "passwd", "config"]


def python_m_cb3(*argv: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cb3", *argv], cwd=cwd, env=ENV, capture_output=True, text=True, check=False, **kwargs
    )


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(tmp_path, flag):
    result = python_m_cb3(flag, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    out = result.stdout
    assert out.startswith("usage: python -m cb3 ")
    for command in SUBCOMMANDS:
        assert f"\n    {command} " in out, command
    for flag in ("--cflags", "--libs", "--includedir", "--libdir", "--pkgconfigdir", "--version"):
        assert flag in out.split("commands:")[0], flag  # in the usage line and the options
    assert "exit status:\n  0  success\n  1  failure" in out and "  2  usage error" in out


def test_version(tmp_path):
    result = python_m_cb3("--version", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith(f"cb3 {cb3.__version__} (rustlib ")
    assert f"HPy ABI {cb3.HPY_ABI}" in result.stdout


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_help_of_each_command(capsys, command):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    prog = "b3sum" if command == "b3sum" else f"python -m cb3 {command}"
    assert out.startswith(f"usage: {prog}"), out[:200]


def test_every_command_is_registered_by_its_module():
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]
    assert list(subparsers.choices) == SUBCOMMANDS
    assert len(COMMANDS) == 5  # cb3/cli/files.py registers both encrypt and decrypt
    for name, sub in subparsers.choices.items():
        assert callable(sub.get_default("func")), name


def test_commands_share_common_not_each_other():
    """b3sum and encrypt/decrypt take the exit statuses, the progress bar and
    the broken-pipe handling from cb3/cli/common.py; neither imports the other."""
    import ast

    from cb3.cli import b3sum, common, files

    for module, other in ((b3sum, "files"), (files, "b3sum")):
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert other not in imported and f"cb3.cli.{other}" not in imported, module.__name__
        assert "common" in imported, module.__name__
    assert files.Progress is b3sum.Progress is common.Progress
    assert common.EXIT_FAILURE == 1 and common.EXIT_USAGE == 2 and common.EXIT_INTERRUPTED == 130


def test_usage_errors_exit_2(capsys):
    assert main(["no-such-command"]) == 2
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err
    assert main(["selftest", "--bogus"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
    assert main(["--cflags", "speed"]) == 2
    assert "C API flags go alone or after `config`" in capsys.readouterr().err


def test_default_command_is_selftest(tmp_path):
    default = python_m_cb3(cwd=tmp_path)
    assert (default.returncode, default.stderr) == (0, "")
    quick = python_m_cb3("selftest", "--no-throughput", cwd=tmp_path)
    assert (quick.returncode, quick.stderr) == (0, "")
    assert quick.stdout.splitlines()[-1] == "known-answer tests: 3 passed"
    assert quick.stdout.splitlines()[-2] == (
        "panic boundary: a deliberate panic unwound to it ('internal error: a Rust panic was caught at the C boundary')"
    )
    assert default.stdout.startswith(quick.stdout)
    assert "encrypt throughput" in default.stdout


def test_selftest_failure_exits_1(capsys, monkeypatch):
    from cb3.cli import selftest

    def broken() -> int:
        raise AssertionError("vector 1: encrypt gave 00")

    monkeypatch.setattr(selftest, "run", broken)
    assert main(["selftest", "--no-throughput"]) == 1
    assert "known-answer tests: FAILED: vector 1" in capsys.readouterr().err


def test_selftest_fails_when_the_panic_boundary_does_not_answer(capsys, monkeypatch):
    from cb3 import _cb3

    monkeypatch.setattr(_cb3, "panic_boundary_check", lambda: "success")
    assert main(["selftest", "--no-throughput"]) == 1
    assert "panic boundary: FAILED: success" in capsys.readouterr().err


def test_closed_pipe_is_quiet(tmp_path):
    """`python -m cb3 | head -1`: no BrokenPipeError traceback, exit status 1."""
    # -u: every line is written when printed (as on a terminal), so the
    # throughput lines, tens of ms apart, meet the closed pipe; block-buffered
    # output this short would go out in one write at exit, before the close.
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "cb3"], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # what `head -1` does after its line
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert first.startswith(b"cb3 ")
    assert err == "", err


def test_c_api_flags_with_and_without_config(capsys):
    libs = " ".join(cb3.capi.get_libs())
    assert main(["--cflags", "--libs"]) == 0
    assert capsys.readouterr().out == f"-I{cb3.get_include()} {libs}\n"
    assert main(["config", "--cflags", "--libs"]) == 0
    assert capsys.readouterr().out == f"-I{cb3.get_include()} {libs}\n"
    assert main(["config"]) == 0  # no flag: both
    assert capsys.readouterr().out == f"-I{cb3.get_include()} {libs}\n"
    assert main(["--pkgconfigdir", "--includedir", "--libdir"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        cb3.capi.get_pkgconfig_dir(),
        cb3.get_include(),
        cb3.get_library_dir(),
    ]


def test_b3sum_arguments_pass_through(tmp_path, capsysbinary, monkeypatch):
    (tmp_path / "-odd name").write_bytes(b"hello")
    monkeypatch.chdir(tmp_path)
    assert main(["b3sum", "--no-names", "-l", "4", "--", "-odd name"]) == 0
    assert capsysbinary.readouterr().out == cb3.hash(b"hello", 4).hex().encode() + b"\n"
    assert main(["b3sum", "--check", "missing-file"]) == 1


def test_speed_names_missing_peers(tmp_path):
    code = (
        "import sys\n"
        "for name in ('cryptography', 'nacl', 'Crypto', 'blake3'): sys.modules[name] = None\n"
        "from cb3.cli import main\n"
        "sys.exit(main(['speed', '--seconds', '0.001']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=ENV, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "cb3 ChaCha20Blake3 encrypt" in result.stdout and "cryptography" not in result.stdout
    assert "not installed, so not compared: cryptography (" in result.stderr
    for dist in ("PyNaCl", "pycryptodome", "blake3"):
        assert dist in result.stderr
    assert "-m pip install cryptography PyNaCl pycryptodome blake3" in result.stderr


def test_speed_prints_one_row_per_case_and_a_column_per_size(tmp_path):
    """The shape of `python -m cb3 speed`'s table: a header of the four
    sizes, each group's cb3 row in MB/s, each installed peer's with its
    ratio; it leaves no file behind."""
    from cb3.cli import speed

    result = python_m_cb3("speed", "--seconds", "0.001", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"cb3 {cb3.__version__}, ") and f"SIMD {cb3.simd_backend()}" in lines[0]
    assert lines[2].split() == ["64", "B", "1", "KiB", "64", "KiB", "1", "MiB"]
    assert [speed.human_size(size) for size in speed.SIZES] == ["64 B", "1 KiB", "64 KiB", "1 MiB"]
    groups = [i for i, line in enumerate(lines) if not line.startswith(" ")][2:]
    assert [lines[i] for i in groups] == [
        "AEAD, encrypt",
        "keyed hash",
        "key derivation, Argon2id: ms per derivation; (x.xx): this peer's time / cb3's",
    ]
    number = r"\s+\d+\.\d"
    assert re.fullmatch(r"  cb3 ChaCha20Blake3 encrypt" + number * 4, lines[groups[0] + 1])
    assert re.fullmatch(r"  cb3 keyed_hash" + number * 4, lines[groups[1] + 1])
    assert lines[groups[2] + 1].split() == ["t=3", "m=64", "MiB", "p=4", "t=1", "m=8", "MiB", "p=1"]
    assert re.fullmatch(r"  cb3 kdf.hash_secret_raw" + number * 2, lines[groups[2] + 2])
    for line in lines[groups[2] + 3 :]:  # argon2-cffi, when installed
        assert len(re.findall(number + r" \(\s*\d+\.\d\d\)", line)) == 2, line
    peers = [line for line in lines[3 : groups[2]] if line.startswith("  ") and not line.startswith("  cb3 ")]
    assert any(line.startswith("  hashlib blake2b keyed ") for line in peers)  # always there
    for line in peers:
        assert len(re.findall(number + r" \(\s*\d+\.\d\d\)", line)) == 4, line
    assert list(tmp_path.iterdir()) == []


def test_speed_help_and_bad_budget(tmp_path):
    helped = python_m_cb3("speed", "--help", cwd=tmp_path)
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith("usage: python -m cb3 speed ") and "--seconds S" in helped.stdout
    for bad in ("0", "-1", "11"):
        refused = python_m_cb3("speed", "--seconds", bad, cwd=tmp_path)
        assert refused.returncode == 2 and "--seconds must be above 0 and at most 10" in refused.stderr, bad
