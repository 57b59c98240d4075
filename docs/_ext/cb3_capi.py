"""The C API reference, generated from rustlib/include/cb3.h at build time.

cbindgen writes the header from the Rust sources, doc comments included
(rustlib/cbindgen.toml; the test command checks it has not drifted). The
directive ``.. cb3-c-header:: ../rustlib/include/cb3.h`` parses it into the
C domain's directives: every ``#define`` (c:macro), enum (c:enum with its
c:enumerator members), struct (c:struct, with its c:member fields if it is
not opaque), callback typedef (c:type)
and function (c:function), each with its ``/** ... */`` comment as the body,
in header order. Nothing is copied by hand: a new export appears here when
the header is regenerated, and ``parse`` refuses a declaration without a
doc comment or one it cannot read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sphinx.util.docutils import SphinxDirective

DOC = re.compile(r"/\*\*(.*?)\*/", re.S)


@dataclass
class Decl:
    kind: str          # macro, enum, struct, type, function; enumerator, member
    name: str
    signature: str     # what follows the directive name
    doc: str
    members: list[Decl] = field(default_factory=list)


def _comment_text(raw: str) -> str:
    lines = []
    for line in raw.strip("\n").split("\n"):
        line = line.strip()
        if line.startswith("*"):
            line = line[1:]
            if line.startswith(" "):
                line = line[1:]
        lines.append(line.rstrip())
    return "\n".join(lines).strip("\n")


def parse(text: str) -> tuple[str, list[Decl]]:
    """``(the file comment, the declarations in order)``."""
    file_comment = _comment_text(text[text.index("/*") + 2 : text.index("*/")])
    decls: list[Decl] = []
    pos = text.index("*/") + 2
    while True:
        m = DOC.search(text, pos)
        if not m:
            break
        doc = _comment_text(m.group(1))
        rest = text[m.end() :].lstrip()
        if rest.startswith("#define"):
            line = rest.split("\n", 1)[0]
            _, name, value = line.split(None, 2)
            decls.append(Decl("macro", name, name, doc + f"\n\nValue: `{value}`"))
            pos = m.end() + text[m.end() :].index(line) + len(line)
        elif rest.startswith("typedef enum"):
            body_end = rest.index("}")
            head, body = rest[: rest.index("{")], rest[rest.index("{") + 1 : body_end]
            name = head.split()[2]
            enum = Decl("enum", name, name, doc)
            for mm in re.finditer(r"/\*\*(.*?)\*/\s*([A-Z0-9_]+)\s*=\s*([^,\n]+),?", body, re.S):
                enum.members.append(Decl("enumerator", mm.group(2), f"{mm.group(2)} = {mm.group(3).strip()}",
                                         _comment_text(mm.group(1))))
            decls.append(enum)
            pos = m.end() + text[m.end() :].index(rest[: body_end]) + body_end
        elif rest.startswith("typedef struct"):
            name = rest.split()[2]
            struct = Decl("struct", name, name, doc)
            end = rest.index(";")
            if "{" in rest[:end]:  # a struct with documented fields, not an opaque one
                end = rest.index("}")
                body = rest[rest.index("{") + 1 : end]
                for mm in re.finditer(r"/\*\*(.*?)\*/\s*([^;]+?)\s*;", body, re.S):
                    field_name = mm.group(2).split()[-1]
                    struct.members.append(Decl("member", field_name, " ".join(mm.group(2).split()),
                                               _comment_text(mm.group(1))))
                end = rest.index(";", end)
            decls.append(struct)
            pos = m.end() + text[m.end() :].index(rest[:end]) + end
        elif rest.startswith("typedef"):
            line = rest[: rest.index(";")]
            name = re.search(r"\(\*(\w+)\)", line).group(1)  # type: ignore[union-attr]
            decls.append(Decl("type", name, " ".join(line[len("typedef") :].split()), doc))
            pos = m.end() + text[m.end() :].index(";")
        else:
            proto = rest[: rest.index(";")]
            if "(" not in proto:
                raise ValueError(f"cb3.h: cannot read the declaration after a doc comment: {proto[:80]!r}")
            proto = " ".join(proto.split())
            name = re.search(r"(\w+)\(", proto).group(1)  # type: ignore[union-attr]
            decls.append(Decl("function", name, proto, doc))
            pos = m.end() + text[m.end() :].index(";")
    return file_comment, decls


def to_rst(text: str, known: dict[str, str]) -> str:
    """A doc comment as reStructuredText: `name` becomes a cross-reference
    when it names a declaration of the header, a literal otherwise; lists
    get the blank lines reStructuredText needs around them."""

    def inline(line: str) -> str:
        out = []
        for i, part in enumerate(re.split(r"`([^`]*)`", line)):
            if i % 2:
                word = part.strip()
                role = known.get(word.rstrip("()"))
                out.append(f":c:{role}:`{word.rstrip('()')}`" if role else f"``{part}``")
            else:
                out.append(re.sub(r"([*|_\\])", r"\\\1", part))
        return "".join(out)

    lines: list[str] = []
    in_list = False
    for line in text.split("\n"):
        item = line.startswith("- ")
        continuation = in_list and line.startswith("  ")
        if item and not in_list and lines and lines[-1]:
            lines.append("")
        if in_list and not item and not continuation and line:
            lines.append("")
        in_list = item or continuation if line else False
        lines.append(inline(line))
    return "\n".join(lines)


def directives(decls: list[Decl]) -> list[str]:
    known = {d.name: ("func" if d.kind == "function" else d.kind) for d in decls}
    known.update({m.name: m.kind for d in decls for m in d.members if m.kind == "enumerator"})
    out: list[str] = []
    for d in decls:
        out += [f".. c:{d.kind}:: {d.signature}", ""]
        out += ["   " + line if line else "" for line in to_rst(d.doc, known).split("\n")]
        out.append("")
        for member in d.members:
            out += [f"   .. c:{member.kind}:: {member.signature}", ""]
            out += ["      " + line if line else "" for line in to_rst(member.doc, known).split("\n")]
            out.append("")
    return out


class CHeader(SphinxDirective):
    """``.. cb3-c-header:: PATH`` (relative to this document): the header's
    file comment as a literal block, then every declaration."""

    required_arguments = 1

    def run(self) -> list[Any]:
        path = Path(self.env.doc2path(self.env.docname)).parent / self.arguments[0]
        self.env.note_dependency(str(path))
        file_comment, decls = parse(path.read_text(encoding="utf-8"))
        rst = ["::", ""] + ["   " + line for line in file_comment.split("\n")] + [""] + directives(decls)
        return self.parse_text_to_nodes("\n".join(rst))


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("cb3-c-header", CHeader)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
