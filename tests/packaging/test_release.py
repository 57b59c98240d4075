"""The release step's pieces that need no build (scripts/harness/release.py):
which wheels a release must hold, the SHA256SUMS writer (checked by
coreutils' sha256sum), the environment without Rust, and the session's
wiring in noxfile.py."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Imported only in a checkout: the wheel runs test an unpacked sdist, whose scripts/ holds
# only the wheel-contents check, and deselect this file (scripts/source-only-tests.txt)
# after collecting it.
if (ROOT / "scripts" / "harness" / "release.py").is_file():
    sys.path.insert(0, str(ROOT / "scripts"))
    from harness import release, wheels


def test_a_release_holds_every_wheel_of_the_wheel_step():
    expected = release.expected_wheels(wheels.PYTHONS)
    assert ("3.11", "x86_64") in expected and ("3.15", "aarch64") in expected
    assert ("pypy3.11", "x86_64") in expected and ("pypy3.11", "aarch64") not in expected
    cpython = [v for v in wheels.PYTHONS if v not in wheels.PYPY_RELEASE]
    assert len(expected) == 2 * len(cpython) + len(wheels.PYPY_RELEASE)


def test_sums_match_sha256sum(tmp_path):
    files = {"cb3-0.2.0.tar.gz": b"sdist", "cb3-0.2.0-cp311-cp311-manylinux_2_17_x86_64.whl": os.urandom(3 << 20),
             "cb3-0.2.0-cp311-cp311-manylinux_2_17_aarch64.whl": b""}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "build.log").write_text("not released")
    path = release.write_sums(tmp_path)
    assert path == tmp_path / "SHA256SUMS"
    lines = path.read_text().splitlines()
    assert [line.split("  ")[1] for line in lines] == sorted(files)  # by name, nothing else
    for line in lines:
        digest, name = line.split("  ")
        assert digest == hashlib.sha256(files[name]).hexdigest()
    if shutil.which("sha256sum"):
        check = subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=tmp_path,
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        (tmp_path / "cb3-0.2.0.tar.gz").write_bytes(b"tampered")
        assert subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=tmp_path,
                              capture_output=True).returncode == 1


def test_sums_refuse_an_empty_directory(tmp_path):
    with pytest.raises(RuntimeError, match="no sdist or wheel"):
        release.write_sums(tmp_path)


def test_the_environment_without_rust(tmp_path, monkeypatch):
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    monkeypatch.setenv("RUSTFLAGS", "-C target-cpu=native")
    monkeypatch.setenv("PATH", f"{Path.home() / '.cargo/bin'}:{os.environ['PATH']}")
    env = release.no_rust_env(tmp_path / "venv", tmp_path / "home")
    assert set(env) == {"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE"}  # nothing inherited
    assert env["PATH"].split(":")[0] == str(tmp_path / "venv" / "bin")
    assert ".cargo" not in env["PATH"] and env["HOME"] == str(tmp_path / "home")
    # A cargo that the PATH reaches is found (and so refused by fresh_venv_without_rust).
    fake = tmp_path / "venv" / "bin" / "cargo"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert release.rust_on_path(env) == [str(fake)] + release.rust_on_path({"PATH": release.NO_RUST_PATH})


def test_a_fresh_venv_without_rust_runs_python_without_cargo(tmp_path):
    if release.rust_on_path({"PATH": release.NO_RUST_PATH}):
        with pytest.raises(RuntimeError, match="Rust is reachable"):
            release.fresh_venv_without_rust(sys.executable, tmp_path / "venv", tmp_path / "home")
        return
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "stale").write_text("from an earlier run")
    env = release.fresh_venv_without_rust(sys.executable, tmp_path / "venv", tmp_path / "home")
    assert not (tmp_path / "home" / "stale").exists()
    probe = ("import os, shutil, sys; print(sys.prefix); "
             "print(shutil.which('cargo'), shutil.which('rustc'), os.environ.get('CARGO_HOME'))")
    result = subprocess.run([tmp_path / "venv" / "bin" / "python", "-c", probe], env=env, capture_output=True,
                            text=True, check=True)
    prefix, tools = result.stdout.splitlines()
    assert Path(prefix) == tmp_path / "venv" and tools == "None None None"


def test_the_release_session_is_wired_and_not_default():
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert re.search(r'@step\("release", default=False\)\ndef \w+\(', noxfile)
    body = noxfile.split('@step("release", default=False)', 1)[1].split("\n@step(", 1)[0]
    for call in ("need_root(", "release.prepare(", "release.check_abi()", "wheels_built(opts)", "release.release("):
        assert call in body
    assert '"release"' in noxfile.split("ROOT_ONLY = ", 1)[1].split(")", 1)[0]
    assert "twine==" in release.TWINE_PIN and any(p.startswith("auditwheel==") for p in wheels.WHEEL_TOOL_PINS)
