"""Writes the seed corpora of the cargo-fuzz targets from the three
ChaCha20-BLAKE3 test vectors (cb3/cli/selftest.py), in the input layout of
fuzz_targets/common/mod.rs:

    op: u8 | key: 32 | nonce: 24 | aad_len: u8 | aad | body_len: u16 le | body

Each vector gives one input per op with the plaintext as body and one with
ciphertext || tag: the encrypting ops must reproduce the vector and the
decrypting ops must accept it (and the fuzzer mutates from there).

    python fuzz/cargo/make_seeds.py CORPUS_DIR   (one subdirectory per target)
"""

import os
import struct
import sys

from cb3.cli.selftest import VECTORS

TARGETS = ("aead_contract", "stream_contract", "differential", "misc")


def seed(op: int, key: bytes, nonce: bytes, aad: bytes, body: bytes) -> bytes:
    return bytes([op]) + key + nonce + bytes([len(aad)]) + aad + struct.pack("<H", len(body)) + body


def main(out: str) -> int:
    count = 0
    for target in TARGETS:
        os.makedirs(os.path.join(out, target), exist_ok=True)
        for number, v in enumerate(VECTORS, 1):
            for op in range(6):
                for name, body in (("plaintext", v.plaintext), ("sealed", v.ciphertext + v.tag)):
                    path = os.path.join(out, target, f"vector{number}-op{op}-{name}")
                    with open(path, "wb") as f:
                        f.write(seed(op, v.key, v.nonce, v.associated_data, body))
                    count += 1
    print(f"{count} seeds from {len(VECTORS)} test vectors in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
