"""The load-time guard: cb3._cb3 refuses to load in an interpreter (or HPy
runtime) other than the one it was built for (cb3/_loading/guard.py, the loader stub
written by setup.py, cext/module.c)."""

import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest

import cb3
from cb3._loading import guard as _guard


def test_matching_build_passes():
    assert _guard.mismatch("m", "pypy311", "0.9.1", "pypy311", "0.9.1") is None
    assert _guard.mismatch("m", "cpython-311", None, "cpython-311", None) is None
    # the cpython ABI has no HPy context: the HPy runtime does not matter
    assert _guard.mismatch("m", "cpython-311", None, "cpython-311", "0.9.0") is None


@pytest.mark.parametrize(
    "built, running, expected",
    [
        (("cpython-311", "0.9.0"), ("pypy311", "0.9.1.dev61+g79fb330d"), "built for the interpreter 'cpython-311'"),
        (("pypy311", "0.9.1.dev61+g79fb330d"), ("cpython-311", "0.9.0"), "imported by 'cpython-311'"),
        (("pypy311", "0.9.1.dev61+g79fb330d"), ("pypy311", "0.9.2"), "built against HPy 0.9.1.dev61+g79fb330d"),
        (("cpython-311", "0.9.0"), ("cpython-311", None), "this interpreter has no HPy runtime"),
        # a PyPy 7.3 (hybrid) binary on PyPy 8.0: another release, and no HPy runtime at all
        (("pypy311-pp73", "0.9.1.dev61+g79fb330d"), ("pypy311-pp80", None), "imported by 'pypy311-pp80'"),
        (("pypy311-pp73", "0.9.1.dev61+g79fb330d"), ("pypy311-pp80", None), "cb3 builds for it with HPy's cpython ABI"),
        # a PyPy 8.0 (cpython-ABI) binary on PyPy 7.3: the same cache tag, another ABI
        (("pypy311-pp80", None), ("pypy311-pp73", None), "built for the interpreter 'pypy311-pp80'"),
        (("cpython-311", None), ("cpython-312", None), "built for the interpreter 'cpython-311'"),
    ],
)
def test_mismatch_is_reported(built, running, expected):
    message = _guard.mismatch("cb3._cb3", *built, *running)
    assert message is not None
    assert expected in message
    assert message.startswith("cb3._cb3 was built")
    assert "Reinstall cb3 with this interpreter" in message


def test_check_build_raises_import_error(monkeypatch):
    _guard.check_build("cb3._cb3", _guard.interpreter_tag(), None)
    with pytest.raises(ImportError, match="built for the interpreter 'elsewhere-99'") as info:
        _guard.check_build("cb3._cb3", "elsewhere-99", None)
    assert info.value.name == "cb3._cb3"
    monkeypatch.setattr(_guard, "running_hpy_version", lambda: "0.0.0-other")
    with pytest.raises(ImportError, match="this interpreter's HPy is 0.0.0-other"):
        _guard.check_build("cb3._cb3", _guard.interpreter_tag(), "0.9.0")


def test_interpreter_tag_names_the_pypy_release():
    # PyPy 7.3 and 8.0 share the cache tag pypy311 but not the ABI: the tag is
    # PyPy's SOABI there (pypy311-pp73, pypy311-pp80), the cache tag elsewhere.
    tag = _guard.interpreter_tag()
    if sys.implementation.name == "pypy":
        major, minor = sys.pypy_version_info[:2]
        assert tag == f"{sys.implementation.cache_tag}-pp{major}{minor}"
        assert tag == sysconfig.get_config_var("SOABI")
    else:
        assert tag == sys.implementation.cache_tag


def test_the_loaded_binary_matches_this_interpreter():
    ext = cb3._cb3
    assert ext.BUILD_INTERPRETER == _guard.interpreter_tag()
    if ext.HPY_ABI != "cpython":
        assert ext.BUILD_HPY_VERSION == _guard.running_hpy_version()


def run_python(code):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    # not from the source tree: the installed cb3 (with its binary) is meant
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(cb3.__file__))),
        timeout=120,
    )


def test_import_refused_under_another_interpreter_tag():
    # End to end: pretend to be another interpreter. Whichever check comes
    # first (the loader stub for hybrid builds, the C exec slot for
    # cpython-ABI builds) must refuse with ImportError, not crash.
    result = run_python(
        """
        import sys
        sys.implementation.cache_tag = "elsewhere-99"
        try:
            import cb3
        except ImportError as e:
            print("REFUSED:", e)
        else:
            print("LOADED")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "REFUSED: cb3._cb3 was built for the interpreter" in result.stdout
    assert "imported by 'elsewhere-99" in result.stdout  # plus "-pp73"/"-pp80" on PyPy


def test_c_exec_slot_checks_too():
    # Bypass the Python-level check the loader stub makes, so that the check
    # in the module's exec slot (cext/module.c) is the one that must fire.
    result = run_python(
        """
        import importlib.util, sys
        import cb3 as real
        path = real._loading.guard.__file__
        for name in [n for n in sys.modules if n == "cb3" or n.startswith("cb3.")]:
            del sys.modules[name]
        spec = importlib.util.spec_from_file_location("cb3._loading.guard", path)
        guard = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(guard)
        sys.modules["cb3._loading.guard"] = guard
        calls = []
        original = guard.check_build
        abi = real._cb3.HPY_ABI
        def first_call_skipped(*args):
            calls.append(args)
            if abi == "cpython" or len(calls) > 1:  # hybrid: the stub's call comes first
                return original(*args)
        guard.check_build = first_call_skipped
        sys.implementation.cache_tag = "elsewhere-99"
        try:
            import cb3
        except ImportError as e:
            print("REFUSED:", e)
            print("CALLS:", len(calls))
        else:
            print("LOADED")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "REFUSED: cb3._cb3 was built for the interpreter" in result.stdout
    # hybrid: the stub's call (skipped) and the C exec slot's; cpython ABI: the C one only
    expected = "CALLS: 1" if cb3._cb3.HPY_ABI == "cpython" else "CALLS: 2"
    assert expected in result.stdout
