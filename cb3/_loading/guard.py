"""Refuse to load a cb3._cb3 binary built for another interpreter.

HPy 0.9 binaries talk to the interpreter through an HPyContext whose layout
is not reliably versioned: PyPy's HPy 0.9.1.dev inserts a field in the middle
of the struct that CPython's hpy 0.9.0 defines, and both still report ABI
version 0.0. A binary built against one set of headers and loaded by the other
calls the wrong context slots and crashes, or silently does the wrong thing.

So the build records the interpreter (:func:`interpreter_tag`) and the HPy
version whose headers it compiled against, and the import checks both before
anything else runs:

* the loader stub (``cb3/_cb3.py``, written by setup.py for the hybrid and
  universal ABIs) calls :func:`check_build` before it loads the binary;
* the module's exec slot (cext/module.c) repeats the check in C, which also
  covers cpython-ABI builds (they have no stub).

Both raise ImportError with :func:`mismatch`'s message.
"""

from __future__ import annotations

import sys

__all__ = ["interpreter_tag", "running_hpy_version", "mismatch", "check_build"]


def interpreter_tag() -> str:
    """The interpreter a binary is built for: ``sys.implementation.cache_tag``,
    and on PyPy its release too (``pypy311-pp73``, ``pypy311-pp80``: PyPy's
    SOABI). PyPy 7.3 and 8.0 share the cache tag ``pypy311`` but not the ABI:
    cb3 builds for 7.3's built-in HPy runtime and for 8.0's cpyext."""
    tag = sys.implementation.cache_tag
    if sys.implementation.name == "pypy":
        major, minor = sys.pypy_version_info[:2]  # type: ignore[attr-defined]
        tag += f"-pp{major}{minor}"
    return tag


def running_hpy_version() -> str | None:
    """The version of the HPy runtime (hpy.universal) of this interpreter, if any."""
    try:
        from hpy.universal import get_version
    except ImportError:
        return None
    return str(get_version()[0])


def mismatch(
    module: str,
    built_interpreter: str,
    built_hpy_version: str | None,
    running_interpreter: str | None,
    running_hpy: str | None,
) -> str | None:
    """The ImportError message if a binary built for (built_interpreter,
    built_hpy_version) must not be loaded by (running_interpreter, running_hpy);
    None if it may. built_hpy_version None means the binary has no HPy
    context (the cpython ABI) and only the interpreter has to match."""
    problems = []
    if built_interpreter != running_interpreter:
        problems.append(f"built for the interpreter {built_interpreter!r}, imported by {running_interpreter!r}")
    if built_hpy_version is not None and running_hpy is None:
        # PyPy 8.0 ships hpy.devel but no hpy.universal (only cpyext): a different case
        # from a different HPy version, and the one a PyPy 7.3 binary meets there.
        problems.append(
            f"built against HPy {built_hpy_version}, and this interpreter has no HPy runtime "
            "(hpy.universal does not import; PyPy 8.0 has none: cb3 builds for it with HPy's cpython ABI)"
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


def check_build(module: str, built_interpreter: str, built_hpy_version: str | None) -> None:
    """Raises ImportError unless the running interpreter matches the build."""
    message = mismatch(
        module,
        built_interpreter,
        built_hpy_version,
        interpreter_tag(),
        running_hpy_version() if built_hpy_version is not None else None,
    )
    if message is not None:
        raise ImportError(message, name=module)
