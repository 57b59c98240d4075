"""Refuse to load a cb3._cb3 binary built for another interpreter.

HPy 0.9 binaries talk to the interpreter through an HPyContext whose layout
is not reliably versioned: PyPy's HPy 0.9.1.dev inserts a field in the middle
of the struct that CPython's hpy 0.9.0 defines, and both still report ABI
version 0.0. A binary built against one set of headers and loaded by the other
calls the wrong context slots and crashes, or silently does the wrong thing.

So the build records the interpreter (``sys.implementation.cache_tag``) and
the HPy version whose headers it compiled against, and the import checks both
before anything else runs:

* the loader stub (``cb3/_cb3.py``, written by setup.py for the hybrid and
  universal ABIs) calls :func:`check_build` before it loads the binary;
* the module's exec slot (cext/module.c) repeats the check in C, which also
  covers cpython-ABI builds (they have no stub).

Both raise ImportError with :func:`mismatch`'s message.
"""

from __future__ import annotations

import sys

__all__ = ["running_hpy_version", "mismatch", "check_build"]


def running_hpy_version() -> str | None:
    """The version of the HPy runtime (hpy.universal) of this interpreter, if any."""
    try:
        from hpy.universal import get_version
    except ImportError:
        return None
    return str(get_version()[0])


def mismatch(
    module: str,
    built_cache_tag: str,
    built_hpy_version: str | None,
    running_cache_tag: str | None,
    running_hpy: str | None,
) -> str | None:
    """The ImportError message if a binary built for (built_cache_tag,
    built_hpy_version) must not be loaded by (running_cache_tag, running_hpy);
    None if it may. built_hpy_version None means the binary has no HPy
    context (the cpython ABI) and only the interpreter has to match."""
    problems = []
    if built_cache_tag != running_cache_tag:
        problems.append(f"built for the interpreter {built_cache_tag!r}, imported by {running_cache_tag!r}")
    if built_hpy_version is not None and running_hpy is None:
        # PyPy 8.0 ships hpy.devel but no hpy.universal (only cpyext): a different case
        # from a different HPy version, and the one a PyPy 7.3 wheel meets there.
        problems.append(
            f"built against HPy {built_hpy_version}, and this interpreter has no HPy runtime "
            "(hpy.universal does not import: PyPy 8.0 has none; cb3 supports PyPy 7.3)"
        )
    elif built_hpy_version is not None and built_hpy_version != running_hpy:
        problems.append(f"built against HPy {built_hpy_version}, this interpreter's HPy is {running_hpy}")
    if not problems:
        return None
    return (
        f"{module} was {'; '.join(problems)}. An HPy binary built against another interpreter's HPy "
        "headers has a different HPyContext layout and would crash, so it is not loaded. Reinstall cb3 "
        "with this interpreter: from a source checkout or an unpacked sdist, "
        "`python -m pip install --force-reinstall --no-cache-dir .` (needs a Rust toolchain and a C "
        "compiler), or `python -m pip install --force-reinstall cb3-<version>-<tag>.whl` with a wheel "
        "built for this interpreter. cb3 is not on PyPI."
    )


def check_build(module: str, built_cache_tag: str, built_hpy_version: str | None) -> None:
    """Raises ImportError unless the running interpreter matches the build."""
    message = mismatch(
        module,
        built_cache_tag,
        built_hpy_version,
        sys.implementation.cache_tag,
        running_hpy_version() if built_hpy_version is not None else None,
    )
    if message is not None:
        raise ImportError(message, name=module)
