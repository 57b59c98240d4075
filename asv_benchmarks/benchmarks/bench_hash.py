"""BLAKE3: cb3.blake3 (hasher object, incl. update_mmap), cb3.hash,
cb3.keyed_hash, cb3.derive_key."""

import cb3

from .common import CONTEXT, FILES, KEY, LARGE, MESSAGES, SOME_SIZES, KiB, Lazy, remove_files

# Long-lived hashers: update() absorbs without limit (2^64 bytes).
HASHER = cb3.blake3()
HASHER_AUTO = cb3.blake3(max_threads=cb3.blake3.AUTO)
MMAP_HASHER = cb3.blake3()
MMAP_HASHER_AUTO = cb3.blake3(max_threads=cb3.blake3.AUTO)
FULL = Lazy(lambda size: cb3.blake3(MESSAGES[size]))


class Hash:
    params = [SOME_SIZES]
    param_names = ["size"]
    version = "1"

    def time_hash(self, size: int) -> None:
        cb3.hash(MESSAGES[size])

    def time_keyed_hash(self, size: int) -> None:
        cb3.keyed_hash(KEY, MESSAGES[size])

    def time_derive_key(self, size: int) -> None:
        # `size` is the key material's length.
        cb3.derive_key(CONTEXT, MESSAGES[size])

    def time_blake3_oneshot(self, size: int) -> None:
        # The hashlib-style idiom: construct with data, then digest.
        cb3.blake3(MESSAGES[size]).digest()

    def time_blake3_update(self, size: int) -> None:
        HASHER.update(MESSAGES[size])


class HashUpdateMmap:
    """update_mmap(path): open, map and hash a file that is in the page cache."""

    params = [[4 * KiB, 1024 * KiB, 16 * 1024 * KiB, 64 * 1024 * KiB]]
    param_names = ["size"]
    version = "1"

    def teardown(self, size: int) -> None:
        remove_files()

    def time_update_mmap(self, size: int) -> None:
        MMAP_HASHER.update_mmap(FILES[size])

    def time_update_mmap_threads_auto(self, size: int) -> None:
        MMAP_HASHER_AUTO.update_mmap(FILES[size])


class HashThreaded:
    """max_threads=AUTO on the hasher: inputs of 128 KiB and more may use a pool."""

    params = [LARGE]
    param_names = ["size"]
    version = "1"

    def time_blake3_update_threads_auto(self, size: int) -> None:
        HASHER_AUTO.update(MESSAGES[size])


class HashFinalize:
    """Fixed costs of the hasher object."""

    params = [[32, 1024]]
    param_names = ["length"]
    version = "1"

    def time_digest(self, length: int) -> None:
        FULL[64].digest(length)

    def time_hexdigest(self, length: int) -> None:
        FULL[64].hexdigest(length)


class HashNew:
    version = "1"

    def time_new(self) -> None:
        cb3.blake3()

    def time_new_keyed(self) -> None:
        cb3.blake3(key=KEY)

    def time_new_derive_key(self) -> None:
        cb3.blake3(derive_key_context=CONTEXT)

    def time_copy(self) -> None:
        HASHER.copy()
