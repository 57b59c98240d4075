"""Run by the wheel tools' venv (pyelftools comes with auditwheel): a wheel
has the C API files, and its module's dynamic symbol table exports its init
function and nothing of libcb3.a."""

import io
import sys
import zipfile

from elftools.elf.elffile import ELFFile


def check(path: str) -> None:
    wheel = zipfile.ZipFile(path)
    names = wheel.namelist()
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
