"""Building from source without a usable Rust toolchain fails with a message
that says what to install (setup.py's find_cargo), before anything is built."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUST_VERSION = re.search(r'^rust-version = "([\d.]+)"', (ROOT / "rustlib/Cargo.toml").read_text(), re.MULTILINE)[1]


def build_ext(tmp_path, path, **extra_env):
    env = {k: v for k, v in os.environ.items() if k not in ("CARGO", "CB3_STATICLIB", "RUSTFLAGS")}
    env.update(PATH=path, PYTHONDONTWRITEBYTECODE="1", **extra_env)
    build = tmp_path / "build"
    command = [sys.executable, "setup.py", "-q", "build_ext", "-b", str(build / "lib"), "-t", str(build / "temp")]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def bin_dir(tmp_path):
    path = tmp_path / "bin"
    path.mkdir()
    return path


def test_missing_cargo_says_what_to_install(tmp_path, bin_dir):
    result = build_ext(tmp_path, str(bin_dir))  # a PATH without cargo
    assert result.returncode != 0
    message = result.stderr
    assert f"building cb3 from source needs cargo (Rust >= {RUST_VERSION}); 'cargo' was not found on PATH" in message
    assert "https://rustup.rs" in message
    # Where a wheel that needs no Rust comes from, while cb3 is on no index.
    assert "on no package index yet" in message and "scripts/test.sh -s wheels" in message
    assert ".test/wheels/dist/" in message and "pip install cb3" in message
    assert not (tmp_path / "build" / "temp" / "cargo-target").exists()


def test_old_cargo_says_which_version_is_needed(tmp_path, bin_dir):
    cargo = bin_dir / "cargo"
    cargo.write_text("#!/bin/sh\necho 'cargo 1.63.0 (fd9c4297c 2022-07-01)'\n")
    cargo.chmod(0o755)
    result = build_ext(tmp_path, str(bin_dir))
    assert result.returncode != 0
    assert f"needs cargo from Rust >= {RUST_VERSION}; {cargo} is 'cargo 1.63.0 (fd9c4297c 2022-07-01)'" in result.stderr
    assert "https://rustup.rs" in result.stderr


def test_rustflags_from_the_environment_keep_rustlibs_own(tmp_path, bin_dir):
    """A RUSTFLAGS variable replaces rustlib/.cargo/config.toml's rustflags
    in cargo: setup.py passes both (a stand-in cargo records what it got)."""
    seen = tmp_path / "rustflags"
    cargo = bin_dir / "cargo"
    cargo.write_text(
        f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'cargo {RUST_VERSION}.0 (0 2026-01-01)'; exit 0; fi\n"
        f"printf '%s' \"$RUSTFLAGS\" > '{seen}'\nexit 1\n"
    )
    cargo.chmod(0o755)
    result = build_ext(tmp_path, f"{bin_dir}:{os.environ['PATH']}", RUSTFLAGS="-C opt-level=3")
    assert result.returncode != 0  # the stand-in builds nothing
    assert seen.read_text() == "-C opt-level=3 --cfg chacha20_avx512", result.stderr


@pytest.mark.parametrize("given", [None, "", "-C opt-level=3", "  -C target-cpu=native  "])
def test_rustflags_script_appends_rustlibs_own(given):
    """rustlib/rustflags.py, the one reader of the config's rustflags (setup.py
    loads it; tests/c/run.sh and the fuzz session run it): the given RUSTFLAGS,
    then the config's, as one value for cargo."""
    import tomllib

    with open(ROOT / "rustlib/.cargo/config.toml", "rb") as f:
        own = tomllib.load(f)["build"]["rustflags"]
    assert own, "rustlib/.cargo/config.toml has no rustflags"
    env = {k: v for k, v in os.environ.items() if k != "RUSTFLAGS"}
    if given is not None:
        env["RUSTFLAGS"] = given
    result = subprocess.run([sys.executable, "-P", str(ROOT / "rustlib/rustflags.py")], env=env,
                            capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == (given or "").split() + own
    assert result.stdout == " ".join((given or "").split() + own) + "\n"
