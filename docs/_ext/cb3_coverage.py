"""The build fails when the site leaves out a public name or a C function.

After reading, every name of the public modules' ``__all__`` (cb3,
cb3.chunked, cb3.chacha20, cb3.blake3, cb3.errors) must be documented in the
Python domain, and every function, macro, enum and type of
rustlib/include/cb3.h in the C domain. A name that cb3 exports from another
module is found under that module's name too (cb3.encrypt_file is
documented as cb3.chunked.encrypt_file; cb3.blake3's module names are the
class's attributes).
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

from sphinx.util import logging

logger = logging.getLogger(__name__)

HEADER = Path(__file__).resolve().parents[2] / "rustlib" / "include" / "cb3.h"
MODULES = ("cb3", "cb3.chunked", "cb3.chacha20", "cb3.blake3", "cb3.errors")


def python_names() -> set[str]:
    names = set()
    for module_name in MODULES:
        importlib.import_module(module_name)
        module = sys.modules[module_name]  # cb3.blake3: the module, not cb3's attribute (the class)
        names.update(f"{module_name}.{name}" for name in module.__all__)
    return names


def c_names() -> set[str]:
    text = HEADER.read_text(encoding="utf-8")
    found = set(re.findall(r"^#define (\w+)", text, re.M)) - {"CB3_H"}
    found |= set(re.findall(r"^(?:[\w ]+?[ *])(cb3_\w+)\(", text, re.M))
    found |= set(re.findall(r"^typedef (?:enum|struct) (\w+)", text, re.M))
    found |= set(re.findall(r"^typedef [^;]*\(\*(\w+)\)", text, re.M))
    return found


def aliases(name: str) -> set[str]:
    """The documented names that may stand for ``name``."""
    module_name, _, short = name.rpartition(".")
    out = {name}
    module = sys.modules[module_name]
    value = getattr(module, short, None)
    for other in MODULES:
        if getattr(sys.modules.get(other), short, object()) is value:
            out.add(f"{other}.{short}")
    if module_name == "cb3.blake3":
        out.add(f"cb3.blake3.{short}" if short != "blake3" else "cb3.blake3")
    return out


def check(app: Any, env: Any) -> None:
    py = {entry[0] for entry in env.get_domain("py").get_objects()}
    c = {entry[0] for entry in env.get_domain("c").get_objects()}
    missing = sorted(name for name in python_names() if not aliases(name) & py)
    missing += sorted(name for name in c_names() if name not in c)
    if missing:
        # A warning: -W turns it into the build's failure, with this message.
        logger.warning("the site does not document: %s", ", ".join(missing))


def setup(app: Any) -> dict[str, Any]:
    app.connect("env-check-consistency", check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
