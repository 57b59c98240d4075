"""Run by the wheel tools' venv (pyelftools comes with auditwheel): a wheel
has the C API files, holds none of the measuring tools, and its module's
dynamic symbol table exports its init function and nothing of libcb3.a."""

from __future__ import annotations

import io
import sys
import zipfile
from typing import Callable

#: What marks a docs generator: every tool that rewrites a page of
#: docs/results/ writes its sections between these markers.
GENERATOR_MARK = b"BEGIN generated:"


def measuring_tools(names: list[str], read: Callable[[str], bytes]) -> list[str]:
    """The files among `names` (paths inside a wheel, `read` giving their
    bytes) that belong to the measuring tools, not the product: anything
    under cb3/bench/, and any Python file that writes a generated section
    of a docs page."""
    found = [name for name in names if name.startswith("cb3/bench/")]
    found += [name for name in names if name.endswith(".py") and name not in found and GENERATOR_MARK in read(name)]
    return found


def check(path: str) -> None:
    from elftools.elf.elffile import ELFFile

    wheel = zipfile.ZipFile(path)
    names = wheel.namelist()
    tools = measuring_tools(names, wheel.read)
    if tools:
        sys.exit(f"{path}: measuring tools in the wheel (they live in asv_benchmarks/tools/): {tools}")
    need = ["cb3/include/cb3.h", "cb3/lib/libcb3.a", "cb3/lib/pkgconfig/cb3.pc", "cb3/__init__.py", "cb3/py.typed"]
    missing = [n for n in need if n not in names]
    if not any(n.startswith("cb3/_cb3") and n.endswith(".so") for n in names):
        missing.append("cb3/_cb3*.so")
    if missing:
        sys.exit(f"{path}: missing {missing}")
    for name in names:
        if name.endswith(".so"):
            dynsym = ELFFile(io.BytesIO(wheel.read(name))).get_section_by_name(".dynsym")
            exported = sorted(s.name for s in dynsym.iter_symbols()
                              if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["bind"] != "STB_LOCAL" and s.name)
            if exported != ["PyInit__cb3"] and not all(e.startswith(("HPyInit", "get_required_hpy_")) for e in exported):
                sys.exit(f"{path}: {name} exports {exported[:20]}")
