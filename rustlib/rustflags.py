"""The RUSTFLAGS for a build of rustlib that is given its own.

A RUSTFLAGS environment variable replaces the `[build] rustflags` of
rustlib/.cargo/config.toml instead of adding to them, and rustlib needs those
(the `chacha20` crate compiles its AVX-512 backend only under their cfg). So
each build of rustlib that passes RUSTFLAGS on (setup.py, tests/c/run.sh, the
fuzz session of scripts/harness/checks.py) gives cargo `merged(flags)`: the
given flags, then the config's. This file is the one reader of the config's
line. Run as a script, it prints `merged($RUSTFLAGS)`.
"""

import os
import tomllib

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cargo", "config.toml")


def config_flags() -> list[str]:
    """rustlib/.cargo/config.toml's `[build] rustflags`."""
    with open(CONFIG, "rb") as f:
        flags = tomllib.load(f)["build"]["rustflags"]
    if not isinstance(flags, list) or not all(isinstance(flag, str) for flag in flags):
        raise ValueError(f"{CONFIG}: [build] rustflags must be a list of strings")
    return flags


def merged(rustflags: str) -> str:
    """`rustflags` (a RUSTFLAGS value, possibly empty), then the config's flags."""
    return " ".join(filter(None, [rustflags.strip(), *config_flags()]))


if __name__ == "__main__":
    print(merged(os.environ.get("RUSTFLAGS", "")))
