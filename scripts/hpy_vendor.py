"""third_party/hpy/ against upstream: the vendored devel/ must be the hpy/devel/
directory of the hash-pinned hpy 0.9.0 sdist plus exactly the patches in
third_party/hpy/patches/ (one unified diff per changed file, each listed in
third_party/hpy/PATCHES.md with its reason, interpreters and test).

    python3 scripts/hpy_vendor.py check SDIST   exit 1 with what differs
    python3 scripts/hpy_vendor.py write SDIST   regenerate patches/ from the tree

SDIST is hpy-0.9.0.tar.gz (scripts/test.sh downloads it, --require-hashes, into
~/.cache/cb3-tools). Its sha256 is checked here too. Stdlib only.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDORED = ROOT / "third_party" / "hpy"
PATCHES = VENDORED / "patches"
SDIST_SHA256 = "4545310f3a7f9ac249c0f19a80a9b05f46565afb62b7e9225b79493b7b6c70cc"  # scripts/test.sh's HPY_SDIST
PREFIX = "hpy-0.9.0/hpy/devel/"


def upstream_files(sdist: Path) -> dict[str, bytes]:
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        sys.exit(f"{sdist}: sha256 {digest}, not the pinned {SDIST_SHA256}")
    files = {}
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.startswith(PREFIX):
                files[member.name[len(PREFIX):]] = tar.extractfile(member).read()
    return files


def vendored_files() -> dict[str, bytes]:
    base = VENDORED / "devel"
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def patch_name(path: str) -> str:
    return path.replace("/", "__") + ".patch"


def unified(path: str, old: bytes, new: bytes) -> str:
    return "".join(
        difflib.unified_diff(
            old.decode().splitlines(keepends=True),
            new.decode().splitlines(keepends=True),
            fromfile=f"a/devel/{path}",
            tofile=f"b/devel/{path}",
        )
    )


def listed_patches() -> list[str]:
    """The patch files PATCHES.md lists (`patches/<name>.patch`)."""
    text = (VENDORED / "PATCHES.md").read_text(encoding="utf-8")
    return sorted(set(re.findall(r"`patches/([^`]+\.patch)`", text)))


def problems(sdist: Path) -> list[str]:
    upstream, ours = upstream_files(sdist), vendored_files()
    found = []
    for path in sorted(set(upstream) - set(ours)):
        found.append(f"devel/{path}: in upstream hpy 0.9.0, missing from the vendored tree")
    for path in sorted(set(ours) - set(upstream)):
        found.append(f"devel/{path}: not in upstream hpy 0.9.0")
    changed = {p for p in set(upstream) & set(ours) if upstream[p] != ours[p]}
    expected = {patch_name(p) for p in changed}
    present = {p.name for p in PATCHES.glob("*.patch")}
    for path in sorted(changed):
        name = patch_name(path)
        if name not in present:
            found.append(f"devel/{path} differs from upstream, and patches/{name} does not exist")
        elif (PATCHES / name).read_text(encoding="utf-8") != unified(path, upstream[path], ours[path]):
            found.append(f"devel/{path}: the change differs from patches/{name}")
    for name in sorted(present - expected):
        found.append(f"patches/{name}: its file is byte-identical to upstream (a stale patch)")
    listed = set(listed_patches())
    for name in sorted(present - listed):
        found.append(f"patches/{name} is not listed in PATCHES.md")
    for name in sorted(listed - present):
        found.append(f"PATCHES.md lists patches/{name}, which does not exist")
    return found


def write(sdist: Path) -> None:
    upstream, ours = upstream_files(sdist), vendored_files()
    PATCHES.mkdir(exist_ok=True)
    for old in PATCHES.glob("*.patch"):
        old.unlink()
    for path in sorted(set(upstream) & set(ours)):
        if upstream[path] != ours[path]:
            (PATCHES / patch_name(path)).write_text(unified(path, upstream[path], ours[path]), encoding="utf-8")
            print(f"wrote patches/{patch_name(path)}")


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "write"):
        sys.exit(__doc__)
    sdist = Path(sys.argv[2])
    if sys.argv[1] == "write":
        write(sdist)
        return 0
    found = problems(sdist)
    for line in found:
        print(line, file=sys.stderr)
    if not found:
        print(f"third_party/hpy/devel = upstream hpy 0.9.0 + {', '.join(listed_patches()) or 'no patches'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
