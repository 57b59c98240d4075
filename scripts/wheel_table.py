"""The wheel table: per interpreter and architecture, whether its wheel was
built, its platform tag (auditwheel) and the tests it passed in a fresh
environment. Made from the rows that scripts/build-wheels.sh and
scripts/wheels.sh write (build-rows.jsonl, test-rows.jsonl).

    python3 scripts/wheel_table.py                      # print the table
    python3 scripts/wheel_table.py --readme README.md   # rewrite README's section

README's section lies between the lines `<!-- wheel-table:start -->` and
`<!-- wheel-table:end -->`; only that text is replaced.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

START, END = "<!-- wheel-table:start -->", "<!-- wheel-table:end -->"


def read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def table(rows_dir: Path) -> tuple[str, dict]:
    builds = read_rows(rows_dir / "build-rows.jsonl")
    tests = read_rows(rows_dir / "test-rows.jsonl")
    lines = [
        "| interpreter | arch | wheel built | wheel tag | tests in a fresh environment (no Rust) | passed | failed | skipped |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    keys = []
    for row in builds + tests:
        key = (row["interpreter"].split(" (")[0], row["arch"])
        if key not in keys:
            keys.append(key)
    for interpreter, arch in keys:
        build = next((b for b in builds if (b["interpreter"], b["arch"]) == (interpreter, arch)), None)
        runs = [t for t in tests if t["interpreter"].split(" (")[0] == interpreter and t["arch"] == arch]
        built = "n/a" if build is None else ("yes" if build["built"] else "**no**")
        tag = (build or {}).get("tag") or "–"
        if not runs:
            lines.append(f"| {interpreter} | {arch} | {built} | {tag} | not run | – | – | – |")
        for run in runs:
            kind = "full suite" if run["tests"] == "full" else "vectors + cross-checks"
            where = run["interpreter"][len(interpreter) :].strip(" ()")
            what = f"{kind}, SIMD {run.get('simd', '?')}" + (f" ({where})" if where else "")
            failed = run["failed"] if run["failed"] >= 0 else "did not finish"
            lines.append(f"| {interpreter} | {arch} | {built} | {tag} | {what} | {run['passed']} | {failed} | {run['skipped']} |")
    return "\n".join(lines) + "\n", {"builds": builds, "tests": tests}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=Path, default=Path(__file__).resolve().parents[1] / ".test" / "wheels")
    parser.add_argument("--json", type=Path, help="also write the rows as one JSON document")
    parser.add_argument("--readme", type=Path, help="replace the table section of this file")
    args = parser.parse_args()
    text, data = table(args.rows)
    (args.rows / "table.md").write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    if args.readme:
        readme = args.readme.read_text(encoding="utf-8")
        if START not in readme or END not in readme:
            print(f"{args.readme}: no {START} ... {END} section", file=sys.stderr)
            return 1
        head, rest = readme.split(START, 1)
        _, tail = rest.split(END, 1)
        args.readme.write_text(f"{head}{START}\n{text}{END}{tail}", encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
