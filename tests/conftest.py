"""Shared fixtures for cb3's test suite.

tests/ is not a package: pytest puts this directory on sys.path, so the test
modules import helpers.py and the independent implementation in reference.py
directly.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, settings

import cb3

# Tests never time anything: no hypothesis deadline. Derandomized so that a
# failure reproduces on the next run.
settings.register_profile(
    "cb3",
    deadline=None,
    derandomize=True,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("cb3")


@pytest.fixture(autouse=True)
def no_handle_left_open() -> Iterator[None]:
    """Under HPy's debug mode (HPY=debug, the hpy-debug steps) every test runs
    inside hpy.debug's LeakDetector: a handle the extension opened during the
    test and never closed fails it with HPyLeakError. There this replaces the
    process-memory tests (the `memory` marker, pyproject.toml)."""
    if not os.environ.get("HPY", "").startswith("debug"):
        yield
        return
    from hpy.debug import LeakDetector

    with LeakDetector():
        yield


@pytest.fixture
def key() -> bytes:
    return bytes(range(1, 33))


@pytest.fixture
def nonce() -> bytes:
    return bytes(range(100, 124))


@pytest.fixture
def cipher(key: bytes) -> cb3.ChaCha20Blake3:
    return cb3.ChaCha20Blake3(key)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Prints how many cases the table-driven tests tried and what the
    measuring tests measured (helpers.CASE_COUNTS, helpers.MEASUREMENTS)."""
    helpers = sys.modules.get("helpers")  # only if a test module imported it
    for label, count in sorted(getattr(helpers, "CASE_COUNTS", {}).items()):
        terminalreporter.write_line(f"{label}: {count} cases tried")
    for label, value in sorted(getattr(helpers, "MEASUREMENTS", {}).items()):
        terminalreporter.write_line(f"{label}: {value}")
