"""cb3's vendored HPy layer (third_party/hpy/) against its upstream, the hpy 0.9.0 sdist.

  python3 scripts/hpy_vendor.py check [--sdist PATH] [--vendor DIR]

check: takes the hash-pinned sdist (HPY_SDIST in scripts/harness/core.py; `pip download`ed
into a temporary directory when no --sdist is given), verifies its sha256, applies the
patches that third_party/hpy/PATCHES.md lists, in their order, to its hpy/devel/, and
compares the result, with the sdist's LICENSE, to the vendored tree: the same set of files,
the same bytes, and PATCHES.md lists exactly the files in patches/, each entry with its
fields. On any difference it lists each one and exits with status 1; status 2 when the
sdist has another hash or a patch does not apply.

For other code (the harness builds hpy.universal from the same sdist and patches):
  patched_devel(sdist) -> {path under hpy/devel/: bytes}
  write_patched_devel(sdist, dest)   writes those files into dest (an unpacked sdist's hpy/devel/)
  patches_digest()                   a short hash of the listed patches (a cache key)

Patches are applied here, in Python, exactly (no offset, no fuzz: the base is pinned), so
the check needs no `patch` program (minimal chroots have none).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

SCRIPTS = Path(__file__).resolve().parent
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))  # harness/: `python -P` does not add the script's directory
from harness.core import HPY_SDIST  # noqa: E402

VENDOR = SCRIPTS.parent / "third_party" / "hpy"
DEVEL = "devel/"  # the sdist's hpy/devel/, vendored as third_party/hpy/devel/
# cb3's own files in third_party/hpy/, not upstream's.
OWN = ("PATCHES.md", "patches/")
# Never compared: bytecode Python may write when setup.py loads devel/__init__.py.
IGNORED_PART = "__pycache__"
FIELDS = ("Files", "Patch", "Interpreters", "Reason", "Test")  # every patch's entry in PATCHES.md


class VendorError(Exception):
    """The sdist, PATCHES.md or a patch is not what this check expects."""


# ---- the pinned sdist ------------------------------------------------------------
def pin() -> tuple[str, str, str]:
    """(name, version, sha256) of HPY_SDIST."""
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^ ]+) --hash=sha256:([0-9a-f]{64})", HPY_SDIST)
    if m is None:
        raise VendorError(f"HPY_SDIST is not 'name==version --hash=sha256:HEX': {HPY_SDIST!r}")
    return m[1], m[2], m[3]


def sdist_name() -> str:
    name, version, _ = pin()
    return f"{name}-{version}"


def download_sdist(dest: Path) -> Path:
    """The pinned sdist, downloaded by pip into dest (pip checks the hash too)."""
    dest.mkdir(parents=True, exist_ok=True)
    req = dest / "hpy-requirements.txt"
    req.write_text(HPY_SDIST + "\n")
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-binary", ":all:", "--require-hashes", "-r", str(req), "-d", str(dest)], check=True)
    return dest / f"{sdist_name()}.tar.gz"


def upstream_files(sdist: Path) -> dict[str, bytes]:
    """The upstream files cb3 vendors, keyed by their path under third_party/hpy/: the
    sdist's hpy/devel/ tree (as devel/...) and its LICENSE. Refuses any other sdist."""
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != pin()[2]:
        raise VendorError(f"{sdist}: sha256 {digest}, the pin (HPY_SDIST) says {pin()[2]}")
    top = sdist_name() + "/"
    files: dict[str, bytes] = {}
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            rel = member.name.removeprefix(top)
            if rel.startswith("hpy/" + DEVEL):
                key = rel.removeprefix("hpy/")
            elif rel == "LICENSE":
                key = rel
            else:
                continue
            if member.isdir():
                continue
            if ".." in Path(key).parts:
                raise VendorError(f"{sdist}: {member.name} leaves its directory")
            if not member.isfile():
                raise VendorError(f"{sdist}: {member.name} is not a regular file")
            data = tar.extractfile(member)
            assert data is not None  # a regular file
            files[key] = data.read()
    if not any(k.startswith(DEVEL) for k in files) or "LICENSE" not in files:
        raise VendorError(f"{sdist}: no {top}hpy/{DEVEL} or {top}LICENSE")
    return files


# ---- PATCHES.md ------------------------------------------------------------------
@dataclass(frozen=True)
class Listed:
    """One patch's entry in PATCHES.md: `### Patch N: title` and its `- **Field:** value` lines."""

    number: int
    title: str
    fields: dict[str, str]

    @property
    def patch(self) -> str:
        """The patch file, relative to third_party/hpy/."""
        return self.fields["Patch"].strip("`")

    @property
    def files(self) -> list[str]:
        """The files it changes, relative to third_party/hpy/."""
        return re.findall(r"`([^`]+)`", self.fields["Files"])


def listed_patches(vendor: Path = VENDOR) -> list[Listed]:
    """PATCHES.md's patch entries, in the order they are applied."""
    entries: list[Listed] = []
    current: Listed | None = None
    field = ""
    for line in (vendor / "PATCHES.md").read_text().splitlines():
        heading = re.match(r"#{1,3} ", line)
        m = re.fullmatch(r"### Patch (\d+): (.+)", line)
        if m:
            current = Listed(int(m[1]), m[2], {})
            entries.append(current)
            field = ""
        elif heading:
            current = None
        elif current is not None:
            f = re.fullmatch(r"- \*\*(\w+):\*\* (.+)", line)
            if f:
                field = f[1]
                current.fields[field] = f[2]
            elif field and line.startswith("  ") and line.strip():
                current.fields[field] += " " + line.strip()  # a wrapped field
            else:
                field = ""
    for e in entries:
        if "Patch" not in e.fields:
            raise VendorError(f"PATCHES.md: Patch {e.number} has no **Patch:** line")
    return entries


def patch_list_problems(vendor: Path = VENDOR) -> list[str]:
    """What is wrong with PATCHES.md's list (empty: nothing): every file in patches/ is
    listed and every listed one exists, numbered 1, 2, ... in order as NNNN-*.patch, with
    all of FIELDS, and its Files are exactly the files its diff touches."""
    entries = listed_patches(vendor)
    on_disk = {p.relative_to(vendor).as_posix() for p in (vendor / "patches").glob("*")}
    listed = [e.patch for e in entries]
    out = [f"{p} is not listed in PATCHES.md" for p in sorted(on_disk - set(listed))]
    for n, e in enumerate(entries, 1):
        where = f"PATCHES.md, Patch {e.number}"
        if e.number != n:
            out.append(f"{where}: should be Patch {n} (patches are numbered in the order they apply)")
        if not re.fullmatch(rf"patches/{n:04d}-[a-z0-9-]+\.patch", e.patch):
            out.append(f"{where}: its patch file {e.patch!r} is not patches/{n:04d}-<short-name>.patch")
        out += [f"{where}: no **{f}:** line" for f in FIELDS if not e.fields.get(f, "").strip()]
        if e.patch not in on_disk:
            out.append(f"{where}: {e.patch} does not exist")
            continue
        try:
            touched = sorted({DEVEL + name for fp in parse_patch((vendor / e.patch).read_bytes())
                              for name in (fp.old, fp.new) if name is not None})
        except VendorError as err:
            out.append(f"{where}: {e.patch}: {err}")
            continue
        if "Files" in e.fields and sorted(e.files) != touched:
            out.append(f"{where}: **Files:** says {sorted(e.files)}, {e.patch} changes {touched}")
    return out


# ---- unified diffs ---------------------------------------------------------------
@dataclass
class Hunk:
    old_start: int
    old: list[bytes]  # the lines it expects (context and removed)
    new: list[bytes]  # the lines it leaves (context and added)


@dataclass
class FilePatch:
    old: str | None  # None: the patch creates the file
    new: str | None  # None: the patch deletes it
    hunks: list[Hunk]


def _path(header: bytes) -> str | None:
    name = header[4:].split(b"\t")[0].strip().decode()
    if name == "/dev/null":
        return None
    if not name.startswith(("a/", "b/")):
        raise VendorError(f"patch path {name!r} has no a/ or b/ prefix")
    return name[2:]


def parse_patch(text: bytes) -> list[FilePatch]:
    """The files and hunks of a unified diff (paths a/... b/...). Text before the
    first `--- ` line is a description and is skipped."""
    lines = text.splitlines(keepends=True)
    out: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not (lines[i].startswith(b"--- ") and i + 1 < len(lines) and lines[i + 1].startswith(b"+++ ")):
            i += 1
            continue
        fp = FilePatch(_path(lines[i]), _path(lines[i + 1]), [])
        out.append(fp)
        i += 2
        while i < len(lines) and lines[i].startswith(b"@@ "):
            m = re.match(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", lines[i])
            if m is None:
                raise VendorError(f"bad hunk header {lines[i]!r}")
            old_left = int(m[2] if m[2] is not None else 1)
            new_left = int(m[4] if m[4] is not None else 1)
            # A hunk that only adds lines after line N says -N,0: it starts after line N.
            hunk = Hunk(int(m[1]) + (1 if old_left == 0 else 0), [], [])
            i += 1
            last: list[list[bytes]] = []
            while old_left > 0 or new_left > 0:
                if i >= len(lines):
                    raise VendorError(f"patch ends inside a hunk of {fp.new or fp.old}")
                line = lines[i]
                kind, body = line[:1], line[1:]
                if line in (b"\n", b"\r\n"):  # an empty context line whose space an editor removed
                    kind, body = b" ", line
                if kind == b" ":
                    hunk.old.append(body)
                    hunk.new.append(body)
                    old_left, new_left, last = old_left - 1, new_left - 1, [hunk.old, hunk.new]
                elif kind == b"-":
                    hunk.old.append(body)
                    old_left, last = old_left - 1, [hunk.old]
                elif kind == b"+":
                    hunk.new.append(body)
                    new_left, last = new_left - 1, [hunk.new]
                elif line.startswith(b"\\"):
                    pass  # handled below, after the line it follows
                else:
                    raise VendorError(f"bad line in a hunk of {fp.new or fp.old}: {line!r}")
                i += 1
                if i < len(lines) and lines[i].startswith(b"\\"):  # "\ No newline at end of file"
                    for side in last:
                        side[-1] = side[-1].rstrip(b"\r\n")
                    i += 1
            fp.hunks.append(hunk)
    if not out:
        raise VendorError("no file in the patch")
    return out


def apply_patch(files: dict[str, bytes], text: bytes, base: str = DEVEL) -> None:
    """Applies a unified diff to files (keys: base + the diff's paths), in place.
    Every hunk must match exactly where it says."""
    for fp in parse_patch(text):
        if fp.old is not None and fp.new is not None and fp.old != fp.new:
            raise VendorError(f"renames are not supported: {fp.old} -> {fp.new}")
        name = fp.old if fp.old is not None else fp.new
        assert name is not None  # parse_patch: not both /dev/null
        key = base + name
        if fp.old is None:
            if key in files:
                raise VendorError(f"the patch creates {key}, which exists")
            src: list[bytes] = []
        else:
            if key not in files:
                raise VendorError(f"the patch changes {key}, which does not exist")
            src = files[key].splitlines(keepends=True)
        dst: list[bytes] = []
        pos = 0  # lines of src consumed
        for h in fp.hunks:
            start = h.old_start - 1
            if start < pos or src[start:start + len(h.old)] != h.old:
                raise VendorError(f"{key}: hunk at line {h.old_start} does not match")
            dst += src[pos:start] + h.new
            pos = start + len(h.old)
        dst += src[pos:]
        if fp.new is None:
            if dst:
                raise VendorError(f"{key}: the patch deletes it but leaves lines")
            del files[key]
        else:
            files[key] = b"".join(dst)


# ---- the expected tree, and the comparison -----------------------------------------
def expected_tree(sdist: Path, vendor: Path = VENDOR) -> dict[str, bytes]:
    """What third_party/hpy/ holds besides cb3's own files: the sdist's vendored files
    with the listed patches applied, in order."""
    files = upstream_files(sdist)
    for entry in listed_patches(vendor):
        apply_patch(files, (vendor / entry.patch).read_bytes())
    return files


def patched_devel(sdist: Path, vendor: Path = VENDOR) -> dict[str, bytes]:
    """The patched hpy/devel/ tree: paths relative to hpy/devel/ -> contents."""
    return {k.removeprefix(DEVEL): v for k, v in expected_tree(sdist, vendor).items() if k.startswith(DEVEL)}


def write_patched_devel(sdist: Path, dest: Path, vendor: Path = VENDOR) -> None:
    """Writes the patched hpy/devel/ files into dest (e.g. an unpacked sdist's hpy/devel/)."""
    for rel, data in patched_devel(sdist, vendor).items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def patches_digest(vendor: Path = VENDOR) -> str:
    """12 hex digits that change with the list of patches or any patch's bytes."""
    h = hashlib.sha256()
    for entry in listed_patches(vendor):
        h.update(entry.patch.encode() + b"\0" + (vendor / entry.patch).read_bytes() + b"\0")
    return h.hexdigest()[:12]


def vendored_tree(vendor: Path = VENDOR) -> dict[str, bytes]:
    """Every file in third_party/hpy/ except cb3's own (PATCHES.md, patches/) and bytecode."""
    files: dict[str, bytes] = {}
    for path in sorted(vendor.rglob("*")):
        rel = path.relative_to(vendor).as_posix()
        if path.is_dir() or IGNORED_PART in path.relative_to(vendor).parts or rel.startswith(OWN):
            continue
        files[rel] = path.read_bytes()
    return files


def differences(sdist: Path, vendor: Path = VENDOR) -> list[str]:
    """How the vendored tree differs from upstream + the listed patches (empty: it does not)."""
    out = patch_list_problems(vendor)
    expected, actual = expected_tree(sdist, vendor), vendored_tree(vendor)
    out += [f"missing from {vendor}: {p}" for p in sorted(expected.keys() - actual.keys())]
    out += [f"in {vendor} but not upstream (nor created by a patch): {p}"
            for p in sorted(actual.keys() - expected.keys())]
    for p in sorted(expected.keys() & actual.keys()):
        if expected[p] != actual[p]:
            diff = difflib.unified_diff(expected[p].decode(errors="replace").splitlines(),
                                        actual[p].decode(errors="replace").splitlines(),
                                        f"upstream+patches/{p}", f"vendored/{p}", lineterm="", n=1)
            shown = list(diff)
            more = f"\n    ... {len(shown) - 40} more diff lines" if len(shown) > 40 else ""
            out.append(f"differs: {p} (upstream + patches vs vendored):\n    " + "\n    ".join(shown[:40]) + more)
    return out


def check(sdist: Path | None, vendor: Path = VENDOR) -> int:
    with tempfile.TemporaryDirectory(prefix="cb3-hpy-sdist-") as tmp:
        path = sdist if sdist is not None else download_sdist(Path(tmp))
        try:
            found = differences(path, vendor)
        except (VendorError, OSError) as e:  # an sdist or patch that cannot be read or applied
            print(f"hpy_vendor check: {e}", file=sys.stderr)
            return 2
    patches = [e.patch for e in listed_patches(vendor)]
    if found:
        print(f"{vendor} is not {sdist_name()} + {patches}:", file=sys.stderr)
        for line in found:
            print("  " + line, file=sys.stderr)
        return 1
    print(f"{vendor}: {sdist_name()} (sha256 {pin()[2][:12]}...) + {len(patches)} patch(es) {patches}: identical")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hpy_vendor.py", description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="the vendored tree is the pinned sdist plus exactly the listed patches")
    c.add_argument("--sdist", type=Path, help="the hpy sdist (default: pip download the pin)")
    c.add_argument("--vendor", type=Path, default=VENDOR, help="the vendored directory (default: %(default)s)")
    args = p.parse_args(argv)
    return check(args.sdist, args.vendor)


if __name__ == "__main__":
    sys.exit(main())
