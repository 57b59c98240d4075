"""Argon2id (cb3.kdf.hash_secret_raw) next to argon2-cffi (libargon2) on the
same parameters: RFC 9106's second recommended option (cb3's default when
encrypting, t=3 m=64 MiB p=4) and a small one-lane setting (t=1 m=8 MiB
p=1). One derivation per sample; lower is better. cb3 runs the lanes on its
thread pool, libargon2 on one thread per lane."""

try:
    from argon2.low_level import Type, hash_secret_raw as argon2_cffi
except ImportError:  # not in the asv matrix: the peer rows are skipped
    argon2_cffi = None

from cb3 import kdf

PASSWORD = b"correct horse battery staple"
SALT = bytes(range(16))
#: (time_cost, memory_cost KiB, parallelism)
PARAMS = ["3,65536,4", "1,8192,1"]


def _costs(params: str) -> tuple[int, int, int]:
    t, m, p = (int(x) for x in params.split(","))
    return t, m, p


class KDF:
    params = [PARAMS]
    param_names = ["t,m,p"]
    version = "1"
    number = 1
    repeat = (3, 10, 20.0)
    timeout = 120

    def time_cb3_hash_secret_raw(self, params: str) -> None:
        kdf.hash_secret_raw(PASSWORD, SALT, *_costs(params), 32)


class KDFPeers:
    params = [PARAMS]
    param_names = ["t,m,p"]
    version = "1"
    number = 1
    repeat = (3, 10, 20.0)
    timeout = 120

    def setup(self, params: str) -> None:
        if argon2_cffi is None:
            raise NotImplementedError("argon2-cffi is not installed")

    def time_argon2_cffi_hash_secret_raw(self, params: str) -> None:
        t, m, p = _costs(params)
        argon2_cffi(PASSWORD, SALT, time_cost=t, memory_cost=m, parallelism=p, hash_len=32, type=Type.ID)
