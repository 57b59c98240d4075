"""The shipped static library (cb3/lib/libcb3.a, setup.py's seal_archive)
exports the C API and nothing else: its only defined global symbols are
cb3_*. Before, it exported ~2,700 names, among them the BLAKE3 C library's
own (blake3_hash_many_avx2, ...) and Rust's runtime (rust_eh_personality),
so a program that also links libblake3 or another Rust staticlib clashed."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cb3
import cb3.capi

NM = shutil.which("nm")
CC = shutil.which("cc") or shutil.which("gcc")
AR = shutil.which("ar")
pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the archive is sealed on Linux (GNU binutils)"),
    pytest.mark.skipif(not (NM and CC and AR), reason="needs nm, ar and a C compiler (apt-get install gcc binutils)"),
]

ARCHIVE = Path(cb3.capi.get_library_dir()) / "libcb3.a"

# Names that the BLAKE3 C library (libblake3) and any Rust staticlib define too.
OTHER_LIBRARY = [
    "blake3_hash_many_sse2", "blake3_hash_many_sse41", "blake3_hash_many_avx2", "blake3_hash_many_avx512",
    "blake3_compress_in_place_sse2", "blake3_compress_in_place_sse41", "blake3_compress_in_place_avx512",
    "blake3_compress_xof_sse2", "blake3_compress_xof_sse41", "blake3_compress_xof_avx512",
    "blake3_xof_many_avx512", "rust_eh_personality",
]


def defined_globals(path: Path) -> list[str]:
    assert NM is not None
    listing = subprocess.run([NM, "-g", "--defined-only", "--format=posix", str(path)],
                             capture_output=True, text=True, check=True).stdout
    # Lines are "name type value size"; archive member headers end with ':'.
    return [line.split()[0] for line in listing.splitlines() if line.strip() and not line.rstrip().endswith(":")]


def test_only_cb3_symbols_are_global() -> None:
    names = defined_globals(ARCHIVE)
    others = sorted(name for name in names if not name.startswith("cb3_"))
    assert not others, f"{len(others)} non-cb3 global symbols, e.g. {others[:10]}"
    header = (Path(cb3.capi.get_include()) / "cb3.h").read_text(encoding="utf-8")
    for name in names:
        assert f"{name}(" in header, f"{name} is global but not declared in cb3.h"
    assert "cb3_aead_encrypt" in names and "cb3_blake3_hash" in names


def test_links_next_to_libblake3_and_another_rust_staticlib(tmp_path: Path) -> None:
    """A program that also links an archive defining libblake3's and Rust's
    runtime names (which abort if cb3 ever called them) links, and cb3
    still hashes with its own code."""
    assert CC is not None and AR is not None
    other = "#include <stdlib.h>\nint blake3_hasher_init(void) { return 42; }\n" + "".join(
        f"void {name}(void) {{ abort(); }}\n" for name in OTHER_LIBRARY
    )
    (tmp_path / "other.c").write_text(other)
    data_len = 1 << 20
    (tmp_path / "main.c").write_text(
        """
#include <stdio.h>
#include <stdlib.h>
#include "cb3.h"
int blake3_hasher_init(void);
int main(void) {
    size_t n = %d;
    unsigned char *data = calloc(n, 1), out[32];
    if (data == NULL || cb3_blake3_hash(data, n, out, 32) != CB3_RESULT_OK) return 1;
    for (int i = 0; i < 32; i++) printf("%%02x", out[i]);
    printf(" %%d\\n", blake3_hasher_init());
    free(data);
    return 0;
}
"""
        % data_len
    )
    subprocess.run([CC, "-c", "-O1", "other.c", "-o", "other.o"], cwd=tmp_path, check=True)
    subprocess.run([AR, "rcs", "libother.a", "other.o"], cwd=tmp_path, check=True)
    link = subprocess.run(
        [CC, "-O1", *cb3.capi.get_cflags(), "main.c", "-o", "main", f"-L{tmp_path}", "-lother",
         *cb3.capi.get_libs()],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )
    assert link.returncode == 0, link.stderr
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"{cb3.hash(bytes(data_len)).hex()} 42\n"
