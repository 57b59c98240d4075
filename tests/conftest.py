"""Shared fixtures for cb3's test suite.

tests/ is not a package: pytest puts this directory on sys.path, so the test
modules import helpers.py and the independent implementation in reference.py
directly.
"""

from __future__ import annotations

import sys
from typing import Any

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
