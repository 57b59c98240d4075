"""Encrypt a directory tree, one task per file, on a dask.distributed cluster
or a concurrent.futures pool (the recipe of docs/guides/at-scale.md).

Each task gets the key as bytes and makes its own cipher: cb3's objects
refuse pickling (that would copy the key into every message) and the ones
with a counter refuse to work in a forked child. Each file is bound to its
path in the tree through the associated data, so files cannot be swapped or
renamed unnoticed.

    python examples/encrypt_tree.py --page docs/results/at-scale.md

measures both backends in one run on a generated tree and rewrites that
page's generated section (tests/docs/test_at_scale.py runs the recipe itself).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import tempfile
import time
from itertools import repeat
from pathlib import Path
from typing import Any, Iterator

import cb3


def files_of(src_root: Path, dst_root: Path, suffix: str = ".cb3") -> Iterator[tuple[str, str, bytes]]:
    """``(source, destination, associated data)`` for every file of the tree."""
    for path in sorted(p for p in src_root.rglob("*") if p.is_file()):
        relative = path.relative_to(src_root).as_posix()
        yield str(path), str(dst_root / (relative + suffix)), relative.encode()


def encrypt_one(key: bytes, src: str, dst: str, associated_data: bytes) -> int:
    """One task: a cipher made here, from the key's bytes. Returns the bytes encrypted."""
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    return cb3.encrypt_file(key, src, dst, associated_data=associated_data)


def decrypt_one(key: bytes, src: str, dst: str, associated_data: bytes) -> int:
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    return cb3.decrypt_file(key, src, dst, associated_data=associated_data)


def encrypt_tree_dask(client: Any, key: bytes, src_root: Path, dst_root: Path) -> int:
    """Encrypts every file of ``src_root`` into ``dst_root`` on a dask cluster."""
    srcs, dsts, ads = zip(*files_of(src_root, dst_root))
    futures = client.map(encrypt_one, [key] * len(srcs), srcs, dsts, ads, pure=False)
    return sum(client.gather(futures))


def encrypt_tree_futures(executor: concurrent.futures.Executor, key: bytes, src_root: Path, dst_root: Path) -> int:
    """The same with a concurrent.futures executor (processes or threads)."""
    srcs, dsts, ads = zip(*files_of(src_root, dst_root))
    return sum(executor.map(encrypt_one, repeat(key), srcs, dsts, ads))


def decrypt_tree(executor: concurrent.futures.Executor, key: bytes, src_root: Path, dst_root: Path) -> int:
    """Decrypts a tree that encrypt_tree_* wrote (ChunkedError if any file was changed)."""
    triples = [(s, d.removesuffix(".cb3"), a.removesuffix(b".cb3")) for s, d, a in files_of(src_root, dst_root, "")]
    srcs, dsts, ads = zip(*triples)
    return sum(executor.map(decrypt_one, repeat(key), srcs, dsts, ads))


def make_tree(root: Path, files: int, size: int) -> None:
    """A tree of ``files`` random files of ``size`` bytes in a few directories."""
    for n in range(files):
        path = root / f"dir{n % 4}" / f"file{n}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))


def same_trees(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all((a / p).read_bytes() == (b / p).read_bytes() for p in files_a)


def measure(files: int, size: int, workers: int) -> list[dict[str, Any]]:
    """Both backends on one tree in one run: the rows of the results page."""
    from dask.distributed import Client, LocalCluster

    key = cb3.generate_key()
    rows = []
    with tempfile.TemporaryDirectory(prefix="cb3-tree-") as tmp:
        root = Path(tmp)
        make_tree(root / "plain", files, size)
        total = files * size
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            started = time.perf_counter()
            written = encrypt_tree_dask(client, key, root / "plain", root / "dask")
            rows.append({"backend": f"dask.distributed LocalCluster, {workers} worker processes",
                         "seconds": time.perf_counter() - started, "bytes": total, "written": written})
        with concurrent.futures.ProcessPoolExecutor(workers) as pool:
            # Started before the clock, as the cluster was: both time the work only.
            concurrent.futures.wait([pool.submit(os.getpid) for _ in range(workers)])
            started = time.perf_counter()
            written = encrypt_tree_futures(pool, key, root / "plain", root / "futures")
            rows.append({"backend": f"concurrent.futures.ProcessPoolExecutor({workers})",
                         "seconds": time.perf_counter() - started, "bytes": total, "written": written})
            for name in ("dask", "futures"):
                decrypt_tree(pool, key, root / name, root / f"{name}-back")
                if not same_trees(root / "plain", root / f"{name}-back"):
                    raise SystemExit(f"{name}: the decrypted tree differs from the original")
    return rows


def section(rows: list[dict[str, Any]], files: int, size: int, command: str) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "asv_benchmarks"))
    from tools.machine import load_average as _load_average
    from tools.pages import markers, stamp

    begin, end = markers("at-scale")
    lines = [begin, stamp(command, _load_average()) + f"; a tree of {files} files of {size // 1024} KiB.", "",
             "| backend | seconds (start to last result) | MB/s |", "|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['backend']} | {row['seconds']:.2f} | {row['bytes'] / row['seconds'] / 1e6:.0f} |")
    lines.append(end)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--size", type=int, default=1 << 20, help="bytes per file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--page", help="rewrite this page's generated section (docs/results/at-scale.md)")
    args = parser.parse_args(argv)
    rows = measure(args.files, args.size, args.workers)
    options = f" --files {args.files} --size {args.size} --workers {args.workers}"
    shown = args.page if args.page and not os.path.isabs(args.page) else Path(args.page or "PAGE").name
    text = section(rows, args.files, args.size, f"python examples/encrypt_tree.py --page {shown}{options}")
    if args.page:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "asv_benchmarks"))
        from tools.pages import replace_section

        page = Path(args.page)
        page.write_text(replace_section(page.read_text(encoding="utf-8"), text, "at-scale"), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
