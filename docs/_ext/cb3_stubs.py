"""Typed signatures for the extension's callables, from cb3/_cb3.pyi.

The C functions and methods carry their parameters (``__text_signature__``,
cb3/_loading/signatures.py) but no types; the stubs that mypy --strict checks have
them. autodoc gets each extension callable's signature from the stub of the
same name, so the reference shows the types the type checker enforces, from
the one file that states them. Python functions keep their own annotations;
their private testing parameters (a leading underscore) are left out.

Also resolves the names the annotations use that no inventory has:
``Buffer`` (typing_extensions; Python 3.11's docs have no
collections.abc.Buffer) becomes Python's glossary entry "bytes-like object",
and the extension's own module path (cb3._cb3.X) the public name (cb3.X).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.ext import intersphinx

STUBS = Path(__file__).resolve().parents[2] / "cb3" / "_cb3.pyi"
# The public name of each class the extension defines (its __module__ is cb3._cb3).
PUBLIC = {"ChaCha20Blake3": "cb3.ChaCha20Blake3", "Stream": "cb3.Stream", "blake3": "cb3.blake3",
          "ChaCha20": "cb3.chacha20.ChaCha20"}


def stub_signatures(path: Path = STUBS) -> dict[str, tuple[str, str | None]]:
    """``{"ChaCha20Blake3.encrypt": ("(nonce: Buffer, ...)", "bytes"), ...}``;
    a class's entry is its ``__init__`` without ``self`` and without a return."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str | None]] = {}

    def add(qualname: str, fn: ast.FunctionDef, method: bool) -> None:
        args = fn.args
        if method and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list):
            # Drop self: autodoc shows bound signatures.
            if args.posonlyargs:
                args.posonlyargs = args.posonlyargs[1:]
            else:
                args.args = args.args[1:]
        text = "(" + ast.unparse(args) + ")"
        returns = ast.unparse(fn.returns) if fn.returns is not None else None
        found[qualname] = (text, returns)

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            add(node.name, node, method=False)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    if item.name == "__init__":
                        add(item.name, item, method=True)
                        found[node.name] = (found.pop("__init__")[0], None)
                    elif not any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
                        add(f"{node.name}.{item.name}", item, method=True)
    return found


def extension_qualname(obj: Any) -> str | None:
    """The stub name (``"ChaCha20Blake3.encrypt"``) of an object of the
    extension cb3._cb3, None for anything else. (Its classes' ``__module__``
    is the public one, ``cb3`` or ``cb3.chacha20``, so identity decides.)"""
    import cb3._cb3 as extension

    names = {id(value): name for name, value in vars(extension).items()}
    if id(obj) in names:
        return names[id(obj)]
    owner = getattr(obj, "__objclass__", None)
    if owner is not None and id(owner) in names:
        return f"{names[id(owner)]}.{obj.__name__}"
    return None


def process_signature(app: Any, what: str, name: str, obj: Any, options: Any, signature: str | None,
                      return_annotation: str | None) -> tuple[str | None, str | None] | None:
    qualname = extension_qualname(obj)
    if qualname is not None and what in ("function", "method", "class"):
        stub = app.env.cb3_stubs.get(qualname)
        if stub is None:
            raise RuntimeError(f"cb3/_cb3.pyi has no stub for {name}: add one")
        return stub
    function = obj.__init__ if what == "class" else obj
    if signature and what in ("function", "method", "class") and inspect.isfunction(function):
        sig = inspect.signature(obj)
        public = [p for p in sig.parameters.values() if not p.name.startswith("_")]
        if len(public) != len(sig.parameters):
            text = str(sig.replace(parameters=public, return_annotation=inspect.Signature.empty))
            return text, return_annotation
    return None


def missing_reference(app: Any, env: Any, node: pending_xref, contnode: nodes.Element) -> nodes.Element | None:
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py":
        return None
    if target in ("Buffer", "typing_extensions.Buffer", "collections.abc.Buffer"):
        new = pending_xref("", refdomain="std", reftype="term", reftarget="bytes-like object", refexplicit=True)
        return intersphinx.missing_reference(app, env, new, contnode)
    if target.startswith("cb3._cb3."):
        name = target.rsplit(".", 1)[1]
        if name in PUBLIC:
            domain = env.get_domain("py")
            return domain.resolve_xref(env, node["refdoc"], app.builder, "class", PUBLIC[name], node, contnode)
    if target == "PathLike":
        new = pending_xref("", refdomain="py", reftype="class", reftarget="os.PathLike", refexplicit=True)
        return intersphinx.missing_reference(app, env, new, contnode)
    if target in ("Self", "typing_extensions.Self"):
        new = pending_xref("", refdomain="py", reftype="data", reftarget="typing.Self", refexplicit=True)
        return intersphinx.missing_reference(app, env, new, contnode)
    return None


def plain_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """cb3's docstrings are written for ``help()``: the extension's are plain
    text (``*`` and ``|`` are literal there), and an indented example after a
    paragraph is code. Both become what reStructuredText means by them."""
    type_doc = type(obj).__doc__
    if what in ("data", "attribute") and isinstance(type_doc, str) and lines and lines[0] in type_doc:
        lines[:] = []  # a constant's own type's docstring (int's, str's): not about the constant
        return
    if extension_qualname(obj) is not None:
        lines[:] = [re.sub(r"([*|\\])", r"\\\1", line) for line in lines]
    out: list[str] = []
    for i, line in enumerate(lines):
        indented = line.startswith("    ") and line.strip()
        if indented and i >= 2 and not lines[i - 1].strip() and lines[i - 2].strip() and not lines[i - 2].startswith(" "):
            if not out[-2].rstrip().endswith("::"):
                out.insert(len(out) - 1, "")
                out.insert(len(out) - 1, "::")
        out.append(line)
    lines[:] = out


def builder_inited(app: Any) -> None:
    app.env.cb3_stubs = stub_signatures()


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", builder_inited)
    app.connect("autodoc-process-signature", process_signature)
    app.connect("autodoc-process-docstring", plain_docstring)
    app.connect("missing-reference", missing_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
