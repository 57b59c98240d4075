"""Reference costs to read the other timings against: the harness's own
per-call floor, and the copy that time_decrypt_in_place makes each call."""

from .common import MESSAGES, SIZES, Lazy

BUF = Lazy(bytearray)


class Overhead:
    version = "1"

    def time_empty_call(self) -> None:
        # What asv's timing loop costs per call of a benchmark method.
        pass

    def time_lookup(self) -> None:
        # ... plus one input lookup, as most benchmarks make.
        MESSAGES[64]


class CopyInto:
    params = [SIZES]
    param_names = ["size"]
    version = "1"

    def time_copy_into(self, size: int) -> None:
        # The ciphertext copy of bench_aead.AEAD.time_decrypt_in_place, alone.
        buf = BUF[size]
        buf[:] = MESSAGES[size]
