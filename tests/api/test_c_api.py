"""cb3's C API: the C test programs under sanitizers (tests/c/run.sh), the
header's version macros, and the files and flags that the installed package
gives C code (cb3.capi). That the header is what cbindgen makes of the Rust
source is checked once per test command, by scripts/test.sh (it does not
depend on the interpreter)."""

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import cb3
import cb3.capi

ROOT = Path(__file__).resolve().parents[2]
RUSTLIB = ROOT / "rustlib"
HEADER = RUSTLIB / "include" / "cb3.h"
C_TESTS = ROOT / "tests" / "c"


def header_text() -> str:
    return HEADER.read_text(encoding="utf-8")


def exported_functions() -> list[str]:
    """The functions that cb3.h declares."""
    return re.findall(r"^\S.*?\b(cb3_\w+)\(", header_text(), flags=re.MULTILINE)


def test_c_programs_pass_under_sanitizers():
    """tests/c/run.sh: the header compiles as C99/C11/C++ with -Werror, and
    the C and C++ programs that call every function, error path included,
    pass under AddressSanitizer + UBSan + LeakSanitizer."""
    process = subprocess.run(
        ["bash", str(C_TESTS / "run.sh")],
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1200,
        check=False,
    )
    print(process.stdout)
    assert process.returncode == 0, f"tests/c/run.sh failed:\n{process.stdout[-20000:]}"
    assert "tests/c: all passed" in process.stdout
    for program in ("test_aead", "test_stream", "test_chunked", "test_misc", "test_hash", "test_chacha", "test_objects", "test_cxx"):
        assert re.search(rf"^{program}: \d+ passed, 0 failed$", process.stdout, flags=re.MULTILINE), program


def test_every_exported_function_is_called_from_c():
    functions = exported_functions()
    assert len(functions) >= 16, functions
    sources = "".join(path.read_text(encoding="utf-8") for path in sorted(C_TESTS.glob("*.c")))
    missing = [name for name in functions if not re.search(rf"\b{name}\(", sources)]
    assert not missing, f"cb3.h functions that no program in tests/c calls: {missing}"


def test_every_result_code_is_checked_from_c():
    codes = set(re.findall(r"^\s+(CB3_RESULT_\w+) = \d+,", header_text(), flags=re.MULTILINE))
    assert "CB3_RESULT_OK" in codes and "CB3_RESULT_PANIC" in codes
    listed = set(re.findall(r"CB3_RESULT_\w+", (C_TESTS / "test_misc.c").read_text(encoding="utf-8")))
    assert codes <= listed, f"codes missing from test_misc.c's list: {sorted(codes - listed)}"


def test_version_macros_match_the_package_version():
    """rustlib/Cargo.toml holds the version; everything else derives from it
    (setup.py: the package metadata and cb3.pc; the library: cb3_version()
    and so cb3.__version__), except cb3.h's macros, which cbindgen cannot
    derive: they are written in cbindgen.toml and checked here."""
    macros = dict(re.findall(r"^#define CB3_VERSION_(MAJOR|MINOR|PATCH) (\d+)$", header_text(), flags=re.MULTILINE))
    header_version = f"{macros['MAJOR']}.{macros['MINOR']}.{macros['PATCH']}"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in pyproject and "version" in pyproject["dynamic"]
    manifest = tomllib.loads((RUSTLIB / "Cargo.toml").read_text(encoding="utf-8"))
    assert manifest["package"]["version"] == {"workspace": True}
    cargo = manifest["workspace"]["package"]["version"]
    versions = {
        "cb3.h CB3_VERSION_*": header_version,
        "the installed distribution (setup.py)": importlib.metadata.version("cb3"),
        "cb3.pc": re.search(r"^Version: (\S+)$", Path(cb3.capi.get_pkgconfig_dir(), "cb3.pc").read_text(), re.M)[1],
        "rustlib/Cargo.toml": cargo,
        "cb3.__version__": cb3.__version__,
        "cb3_version() (the linked Rust library)": cb3._cb3.version(),
    }
    assert len(set(versions.values())) == 1, versions


def test_header_documents_every_function():
    """Every declaration in cb3.h has a doc comment right above it."""
    text = header_text()
    for name in exported_functions():
        declaration = re.search(rf"^\S.*?\b{name}\(", text, flags=re.MULTILINE)
        before = text[: declaration.start()].rstrip()
        assert before.endswith("*/"), f"{name} has no doc comment"
        doc = before[before.rindex("/**") :]
        assert len(doc) > 80, f"{name}: doc comment too short: {doc}"
    for macro in re.findall(r"^#define (CB3_\w+)", text, flags=re.MULTILINE):
        if macro == "CB3_H":
            continue
        before = text[: text.index(f"#define {macro} ")].rstrip()
        assert before.endswith("*/"), f"{macro} has no doc comment"


def test_native_static_libs_match_rustc(tmp_path):
    """cb3.get_link_args() (and run.sh) list what rustc says a static library
    of this toolchain needs. cb3's dependencies add no native libraries of
    their own, so an empty crate gives the same list."""
    rustc = shutil.which("rustc") or str(Path.home() / ".cargo" / "bin" / "rustc")
    source = tmp_path / "empty.rs"
    source.write_text("", encoding="utf-8")
    process = subprocess.run(
        [rustc, "--crate-type", "staticlib", "--print", "native-static-libs", "-o", str(tmp_path / "libempty.a"),
         str(source)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    match = re.search(r"native-static-libs: (.*)", process.stderr)
    assert match, process.stderr
    assert match.group(1).split() == cb3.get_link_args()
    run_sh = (C_TESTS / "run.sh").read_text(encoding="utf-8")
    assert f"NATIVE_LIBS=({' '.join(cb3.get_link_args())})" in run_sh


def test_installed_package_ships_the_c_api():
    include, libdir = Path(cb3.get_include()), Path(cb3.get_library_dir())
    assert (include / "cb3.h").read_bytes() == HEADER.read_bytes()
    assert (libdir / "libcb3.a").stat().st_size > 100_000
    pc = (Path(cb3.capi.get_pkgconfig_dir()) / "cb3.pc").read_text(encoding="utf-8")
    assert f"Version: {cb3.__version__}\n" in pc
    assert cb3.get_libraries() == ["cb3"]
    assert cb3.get_link_args() == ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]
    assert cb3.get_include is cb3.capi.get_include


def test_main_flags(capsys):
    assert cb3.capi.main_flags(["--cflags"]) == 0
    assert capsys.readouterr().out == f"-I{cb3.get_include()}\n"
    assert cb3.capi.main_flags(["--libs"]) == 0
    libs = f"-L{cb3.get_library_dir()} -lcb3 -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
    assert capsys.readouterr().out == f"{libs}\n"
    assert cb3.capi.main_flags(["--cflags", "--libs"]) == 0
    assert capsys.readouterr().out == f"-I{cb3.get_include()} {libs}\n"
    assert cb3.capi.main_flags(["--includedir", "--libdir", "--pkgconfigdir"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        cb3.get_include(),
        cb3.get_library_dir(),
        cb3.capi.get_pkgconfig_dir(),
    ]
    # Anything else is left to cb3/cli/__init__.py: nothing printed, None returned.
    for argv in ([], ["--version"], ["--cflags", "--bogus"], ["cflags"]):
        assert cb3.capi.main_flags(argv) is None
    assert capsys.readouterr().out == ""


SMOKE_C = r"""
#include <stdio.h>
#include <string.h>
#include "cb3.h"
int main(void)
{
    static const uint8_t key[CB3_KEY_SIZE] = {1}, nonce[CB3_NONCE_SIZE] = {2};
    uint8_t ct[5 + CB3_TAG_SIZE], back[5];
    size_t n = 0;
    cb3_aead *aead = NULL;
    if (cb3_aead_new(key, sizeof key, &aead) != CB3_RESULT_OK) return 1;
    if (cb3_aead_encrypt(aead, nonce, sizeof nonce, (const uint8_t *)"hello", 5, NULL, 0, ct, sizeof ct, &n)) return 2;
    if (cb3_aead_decrypt(aead, nonce, sizeof nonce, ct, n, NULL, 0, CB3_OUTPUT_MODE_SHARED, back, sizeof back, &n)) return 3;
    cb3_aead_free(aead);
    if (n != 5 || memcmp(back, "hello", 5) != 0) return 4;
    for (size_t i = 0; i < sizeof ct; i++) printf("%02x", ct[i]);
    printf(" %s\n", cb3_version());
    return 0;
}
"""


def _smoke(tmp_path, flags: list[str]) -> str:
    cc = os.environ.get("CC", "cc")
    source = tmp_path / "smoke.c"
    source.write_text(SMOKE_C, encoding="utf-8")
    program = tmp_path / "smoke"
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", str(source), *flags, "-o", str(program)], check=True)
    return subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout


def _expected_smoke() -> str:
    ct = cb3.ChaCha20Blake3(bytes([1] + [0] * 31)).encrypt(bytes([2] + [0] * 23), b"hello")
    return f"{ct.hex()} {cb3.__version__}\n"


def test_plain_c_program_links_with_python_m_cb3_flags(tmp_path):
    """What `cc app.c $(python -m cb3 --cflags --libs)` does, with the
    installed package's header and static library."""
    command = [sys.executable, "-c", "import sys, cb3.capi; sys.exit(cb3.capi.main_flags(sys.argv[1:]))"]
    # cwd: `python -c` puts it on sys.path, and a source checkout there would
    # shadow the installed cb3.
    process = subprocess.run([*command, "--cflags", "--libs"], cwd=tmp_path, capture_output=True, text=True, check=True)
    flags = process.stdout.split()
    assert flags == [*cb3.capi.get_cflags(), *cb3.capi.get_libs()]
    assert _smoke(tmp_path, flags) == _expected_smoke()


def test_plain_c_program_links_with_pkg_config(tmp_path):
    pkg_config = shutil.which("pkg-config") or shutil.which("pkgconf")
    if pkg_config is None:
        pytest.skip("pkg-config is not installed")
    env = {**os.environ, "PKG_CONFIG_PATH": cb3.capi.get_pkgconfig_dir()}
    query = [pkg_config, "--cflags", "--libs", "cb3"]
    flags = subprocess.run(query, capture_output=True, text=True, check=True, env=env).stdout.split()
    version = subprocess.run([pkg_config, "--modversion", "cb3"], capture_output=True, text=True, check=True, env=env)
    assert version.stdout.strip() == cb3.__version__
    assert _smoke(tmp_path, flags) == _expected_smoke()
