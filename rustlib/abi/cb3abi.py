"""The C ABI of cb3.h as one normalised line per item, and the rule that
keeps it stable.

    python rustlib/abi/cb3abi.py show [HEADER]    # the header's items
    python rustlib/abi/cb3abi.py check            # the rule below; exit 1 and why
    python rustlib/abi/cb3abi.py write [HEADER]   # rustlib/abi/cb3-VERSION.abi at a release

An item is a function's prototype (parameter names dropped: they are not
part of the ABI), an enum constant's value, a struct's fields in order (its
layout), an opaque struct, a function-pointer typedef or a macro's value:

    function cb3_aead_new(const uint8_t *, size_t, struct cb3_aead **) -> enum cb3_result
    enum cb3_result CB3_RESULT_OK = 0
    struct cb3_chunked_header_fault { enum cb3_chunked_header_rule; uint64_t }
    macro CB3_KEY_SIZE 32

`rustlib/abi/cb3-VERSION.abi` holds the items of each released version. The
rule (semantic versioning of the C ABI, docs/development.md, "Versions and releases"):

- a released version's ABI never changes: while the header's version (its
  CB3_VERSION_* macros) has a snapshot, the header must match it;
- otherwise the header is compared with the latest snapshot before its
  version: an item removed or changed needs a major bump (a minor one while
  the major version is 0), an item added at least a minor bump, and every
  such item is named in CHANGELOG.md's section of the header's version.

Consecutive snapshots obey the same rule, so the history is checked too.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
HEADER = ROOT / "rustlib" / "include" / "cb3.h"
CHANGELOG = ROOT / "CHANGELOG.md"

Version = tuple[int, int, int]


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _squash(text: str) -> str:
    """One space between tokens, none inside `( `, ` )`, ` ,` or before `;`."""
    text = " ".join(text.split())
    text = re.sub(r"\s*([(),;])\s*", r"\1", text)
    return text.replace(",", ", ")


def _parameter_type(parameter: str) -> str:
    """`const uint8_t *key` -> `const uint8_t *`; `void` and unnamed stay."""
    parameter = parameter.strip()
    match = re.fullmatch(r"(.*?[\s*])([A-Za-z_]\w*)", parameter)
    if match is None or parameter == "void" or not re.search(r"\w", match.group(1)):
        return parameter
    kept = match.group(1).strip()
    if kept in ("const", "struct", "enum", "unsigned", "signed"):
        return parameter  # a bare type such as `unsigned int`: nothing named
    return kept


def _parameters(text: str) -> str:
    if not text.strip():
        return ""
    return ", ".join(_parameter_type(p) for p in text.split(","))


def parse(header: str) -> list[str]:
    """The header's ABI items, one normalised line each, sorted."""
    text = _strip_comments(header)
    items = []
    for name, value in re.findall(r"^\s*#\s*define\s+(\w+)[ \t]+([^\n]+)$", text, flags=re.M):
        if name != "CB3_H" and not name.startswith("CB3_VERSION_"):
            items.append(f"macro {name} {' '.join(value.split())}")
    body = re.sub(r"^\s*#[^\n]*$", "", text, flags=re.M)
    body = body.replace('extern "C" {', "").replace('extern "C"{', "")
    body = re.sub(r"^\s*}\s*$", "", body, flags=re.M)  # the extern "C" block's end
    for enum, members, _ in re.findall(r"typedef\s+enum\s+(\w+)\s*{(.*?)}\s*(\w+)\s*;", body, flags=re.S):
        value = -1
        for member in filter(None, (m.strip() for m in members.split(","))):
            name, _, given = (part.strip() for part in member.partition("="))
            value = int(given, 0) if given else value + 1
            items.append(f"enum {enum} {name} = {value}")
    body = re.sub(r"typedef\s+enum\s+\w+\s*{.*?}\s*\w+\s*;", "", body, flags=re.S)
    for struct, fields, _ in re.findall(r"typedef\s+struct\s+(\w+)\s*{(.*?)}\s*(\w+)\s*;", body, flags=re.S):
        types = [_parameter_type(f) for f in fields.split(";") if f.strip()]
        items.append(f"struct {struct} {{ {'; '.join(types)} }}")
    body = re.sub(r"typedef\s+struct\s+\w+\s*{.*?}\s*\w+\s*;", "", body, flags=re.S)
    for declaration in filter(None, (_squash(d) for d in body.split(";"))):
        if match := re.fullmatch(r"typedef struct (\w+) (\w+)", declaration):
            items.append(f"struct {match.group(1)} opaque")
        elif match := re.fullmatch(r"typedef (.*?)\(\*(\w+)\)\((.*)\)", declaration):
            items.append(f"typedef {match.group(2)} {match.group(1).strip()} (*)({_parameters(match.group(3))})")
        elif match := re.fullmatch(r"(.*?[\s*])(\w+)\((.*)\)", declaration):
            items.append(f"function {match.group(2)}({_parameters(match.group(3))}) -> {match.group(1).strip()}")
        else:
            raise ValueError(f"cb3.h: a declaration this parser does not know: {declaration!r}")
    return sorted(items)


def key(item: str) -> str:
    """What an item is about (`function cb3_aead_new`, `enum cb3_result
    CB3_RESULT_OK`): the part that stays when the item changes."""
    kind, rest = item.split(" ", 1)
    if kind == "function":
        return f"function {rest.split('(', 1)[0]}"
    if kind == "enum":
        return f"enum {rest.split(' = ', 1)[0]}"
    return f"{kind} {rest.split(' ', 1)[0]}"


def name(item_key: str) -> str:
    """The C name a changelog entry mentions: the last word of the key."""
    return item_key.rsplit(" ", 1)[-1]


def names(item_key: str) -> tuple[str, ...]:
    """The names a changelog may record a change by: the item's, or for an
    enum constant its enum's too."""
    words = item_key.split(" ")
    return (words[-1], words[1]) if words[0] == "enum" else (words[-1],)


@dataclass
class Changes:
    removed: list[str]
    changed: list[str]
    added: list[str]

    @property
    def breaking(self) -> list[str]:
        return self.removed + self.changed

    def __bool__(self) -> bool:
        return bool(self.removed or self.changed or self.added)


def compare(old: list[str], new: list[str]) -> Changes:
    old_by_key = {key(item): item for item in old}
    new_by_key = {key(item): item for item in new}
    return Changes(
        removed=sorted(k for k in old_by_key if k not in new_by_key),
        changed=sorted(k for k in old_by_key if k in new_by_key and old_by_key[k] != new_by_key[k]),
        added=sorted(k for k in new_by_key if k not in old_by_key),
    )


def parse_version(text: str) -> Version:
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", text.strip())
    if match is None:
        raise ValueError(f"not a MAJOR.MINOR.PATCH version: {text!r}")
    return tuple(map(int, match.groups()))  # type: ignore[return-value]


def show(version: Version) -> str:
    return ".".join(map(str, version))


def header_version(header: str) -> Version:
    macros = dict(re.findall(r"^#define CB3_VERSION_(MAJOR|MINOR|PATCH) (\d+)$", header, flags=re.M))
    return int(macros["MAJOR"]), int(macros["MINOR"]), int(macros["PATCH"])


def allowed(old: Version, new: Version, changes: Changes) -> bool:
    """Semantic versioning: while the major version is 0 the minor version
    plays its part (0.x: a minor bump may break)."""
    if changes.breaking:
        if old[0] == 0:
            return new[0] > 0 or new[1] > old[1]
        return new[0] > old[0]
    if changes.added:
        return new[:2] > old[:2]
    return True


def changelog_section(changelog: str, version: Version) -> str | None:
    """The text of CHANGELOG.md's `## VERSION` section, or None."""
    match = re.search(rf"^## \[?{re.escape(show(version))}\]?(?:[ \t][^\n]*)?$(.*?)(?=^## |\Z)", changelog, flags=re.M | re.S)
    return match.group(1) if match else None


def problems(old: list[str], old_version: Version, new: list[str], new_version: Version, changelog: str,
             what: str) -> list[str]:
    """Why `new` (the ABI of `new_version`) may not follow `old`; none when it may."""
    changes = compare(old, new)
    if not changes:
        return []
    listing = "; ".join(
        f"{label}: {', '.join(name(k) for k in keys)}"
        for label, keys in (("removed", changes.removed), ("changed", changes.changed), ("added", changes.added))
        if keys
    )
    found = []
    if not allowed(old_version, new_version, changes):
        need = ("a major bump (a minor one while the major version is 0)" if changes.breaking
                else "at least a minor bump")
        found.append(f"{what}: the C ABI changed since {show(old_version)} ({listing}), which needs {need}; "
                     f"the version is {show(new_version)}: bump [workspace.package] version in rustlib/Cargo.toml "
                     "and CB3_VERSION_* in rustlib/cbindgen.toml, then regenerate the header")
    section = changelog_section(changelog, new_version)
    if section is None:
        found.append(f"{what}: CHANGELOG.md has no '## {show(new_version)}' section recording the C ABI changes "
                     f"since {show(old_version)} ({listing})")
    else:
        unnamed = [name(k) for k in changes.breaking + changes.added
                   if not any(re.search(rf"\b{n}\b", section) for n in names(k))]
        if unnamed:
            found.append(f"{what}: CHANGELOG.md's {show(new_version)} section does not name these C ABI changes "
                         f"since {show(old_version)}: {', '.join(unnamed)}")
    return found


def snapshots(directory: Path = HERE) -> dict[Version, list[str]]:
    """The committed snapshots, by version."""
    found = {}
    for path in directory.glob("cb3-*.abi"):
        version = parse_version(path.name[len("cb3-"):-len(".abi")])
        found[version] = [line for line in path.read_text(encoding="utf-8").splitlines()
                          if line and not line.startswith("#")]
    return dict(sorted(found.items()))


def check(header: str, changelog: str, saved: dict[Version, list[str]]) -> list[str]:
    """Every reason the header (and the snapshots' history) breaks the rule."""
    found = []
    versions = list(saved)
    for old, new in zip(versions, versions[1:]):
        found += problems(saved[old], old, saved[new], new, changelog, f"rustlib/abi/cb3-{show(new)}.abi")
    version = header_version(header)
    current = parse(header)
    if version in saved:
        changes = compare(saved[version], current)
        if changes:
            found.append(
                f"cb3.h: its version {show(version)} is released (rustlib/abi/cb3-{show(version)}.abi) and its ABI "
                f"differs (removed: {[name(k) for k in changes.removed]}, changed: "
                f"{[name(k) for k in changes.changed]}, added: {[name(k) for k in changes.added]}): "
                "a released ABI never changes; bump the version and record the change in CHANGELOG.md"
            )
        return found
    before = [v for v in versions if v < version]
    if before:
        found += problems(saved[before[-1]], before[-1], current, version, changelog, "cb3.h")
    return found


def write_snapshot(header: str, directory: Path = HERE) -> Path:
    version = header_version(header)
    path = directory / f"cb3-{show(version)}.abi"
    lines = [f"# The C ABI of cb3 {show(version)}, written by rustlib/abi/cb3abi.py from its cb3.h."]
    path.write_text("\n".join(lines + parse(header)) + "\n", encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "check"
    if command == "show":
        header = Path(argv[1]) if len(argv) > 1 else HEADER
        print("\n".join(parse(header.read_text(encoding="utf-8"))))
        return 0
    header = (Path(argv[1]) if len(argv) > 1 else HEADER).read_text(encoding="utf-8")
    if command == "write":
        print(write_snapshot(header))
        return 0
    if command == "check":
        found = check(header, CHANGELOG.read_text(encoding="utf-8"), snapshots())
        for problem in found:
            print(problem, file=sys.stderr)
        if not found:
            print(f"cb3.h {show(header_version(header))}: the C ABI follows rustlib/abi and CHANGELOG.md")
        return 1 if found else 0
    print(f"usage: {sys.argv[0]} show [HEADER] | check | write [HEADER]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
