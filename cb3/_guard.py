"""Refuse to load a cb3._cb3 binary built for another interpreter.

HPy 0.9 binaries talk to the interpreter through an HPyContext whose layout
is not reliably versioned: PyPy's HPy 0.9.1.dev inserts a field in the middle
of the struct that CPython's hpy 0.9.0 defines, and both still report ABI
version 0.0. A binary built against one set of headers and loaded by the other
calls the wrong context slots and crashes, or silently does the wrong thing.

So the build records the interpreter (:func:`interpreter_tag`: the cache tag,
plus PyPy's release series, since PyPy 7.3 and 8.0 are both ``pypy311``) and
the HPy version whose headers it compiled against, and the import checks both
before anything else runs:

* the loader stub (``cb3/_cb3.py``, written by setup.py for the hybrid and
  universal ABIs) calls :func:`check_build` before it loads the binary;
* the module's exec slot (cext/module.c) repeats the check in C, which also
  covers cpython-ABI builds (they have no stub).

Both raise ImportError with :func:`mismatch`'s message. A cb3 whose binary
this interpreter does not even find (its file name carries another
interpreter's ABI tag, e.g. a PyPy 8.0 build under PyPy 7.3) gets
:func:`missing_binary`'s message from cb3/__init__.py.
"""

from __future__ import annotations

import sys

__all__ = ["interpreter_tag", "running_hpy_version", "mismatch", "check_build", "missing_binary"]


def interpreter_tag() -> str:
    """What a binary is built for: ``sys.implementation.cache_tag``, and on
    PyPy its release series as in its SOABI (``pypy311-pp73``, ``pypy311-pp80``):
    PyPy 8.0 has no built-in HPy runtime, so 7.3's hybrid binaries cannot run
    there, and its cpython-ABI binaries need 8.0's cpyext."""
    tag = str(sys.implementation.cache_tag)
    pypy = getattr(sys, "pypy_version_info", None)
    return f"{tag}-pp{pypy[0]}{pypy[1]}" if pypy is not None else tag


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
        problems.append(
            f"built for an HPy {built_hpy_version} runtime (hybrid ABI), and this interpreter has none "
            "(no hpy.universal: PyPy 8.0 has cpyext only, where cb3 is built with the cpython HPy ABI)"
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
        interpreter_tag(),
        running_hpy_version() if built_hpy_version is not None else None,
    )
    if message is not None:
        raise ImportError(message, name=module)


def missing_binary(package_dir: str) -> str:
    """The ImportError message when cb3._cb3 is not found: names the binaries
    that are there (built for other interpreters) and the one this
    interpreter looks for."""
    import importlib.machinery
    import os

    found = sorted(name for name in os.listdir(package_dir) if name.startswith("_cb3") and name.endswith(".so"))
    wanted = ", ".join(f"_cb3{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES[:1])
    return (
        f"cb3's binary extension for this interpreter ({interpreter_tag()}, file {wanted}) is not installed; "
        f"{'this cb3 has ' + ', '.join(found) + ', built for another interpreter' if found else 'this cb3 has none'}. "
        "Install the cb3 wheel for this interpreter (pip picks it by its tag: cp311..cp315, pp73 for PyPy 7.3, "
        "pp80 for PyPy 8.0) or build it here: `python -m pip install --force-reinstall --no-cache-dir .` from a "
        "source checkout (needs a Rust toolchain and a C compiler)."
    )
