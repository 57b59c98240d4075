"""What users and their tools see of the API: inspect.signature works for every
public function, method and constructor (cb3, cb3.chacha20, cb3.blake3) and
equals the .pyi stubs; docstrings come without the signature line; error
messages say what to do."""

from __future__ import annotations

import ast
import copy
import inspect
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

import cb3
import cb3.chacha20
from cb3 import _cb3
from cb3._loading import guard as _guard, signatures as _signatures

STUBS = sorted((Path(cb3.__file__).resolve().parent).glob("*.pyi"))
KEY, NONCE = bytes(range(32)), bytes(range(24))


# ---- the stubs, parsed ----


def _stub_params(node: ast.FunctionDef, drop_self: bool) -> list[tuple[str, str, Any]]:
    """(name, kind, default) of a stub function; default None when absent,
    Ellipsis when the stub does not say."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    P = inspect.Parameter
    out = []
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = P.POSITIONAL_ONLY if i < len(args.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        out.append((arg.arg, kind, default))
    if args.vararg:
        out.append((args.vararg.arg, P.VAR_POSITIONAL, None))
    out += [(arg.arg, P.KEYWORD_ONLY, d) for arg, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append((args.kwarg.arg, P.VAR_KEYWORD, None))
    if drop_self:
        out = out[1:]
    return [
        (name, str(kind), ... if isinstance(d, ast.Constant) and d.value is ... else None if d is None else ast.literal_eval(d))
        for name, kind, d in out
    ]


def _stubs() -> tuple[dict[str, ast.FunctionDef], dict[str, dict[str, ast.FunctionDef]]]:
    functions: dict[str, ast.FunctionDef] = {}
    classes: dict[str, dict[str, ast.FunctionDef]] = {}
    for path in STUBS:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                classes[node.name] = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
    return functions, classes


STUB_FUNCTIONS, STUB_CLASSES = _stubs()


def _actual(sig: inspect.Signature, drop_first: bool) -> list[tuple[str, str, Any]]:
    params = list(sig.parameters.values())[1 if drop_first else 0 :]
    return [(p.name, str(p.kind), None if p.default is p.empty else p.default) for p in params]


def _same(stub: list[tuple[str, str, Any]], actual: list[tuple[str, str, Any]]) -> bool:
    if len(stub) != len(actual):
        return False
    return all(s[:2] == a[:2] and (s[2] is ... or s[2] == a[2]) for s, a in zip(stub, actual))


# ---- the public API, walked ----


def public_api() -> list[tuple[str, Any, str | None, str | None]]:
    """(qualified name, object, stub class or None, stub name or None) for
    every public callable: cb3's names, cb3.chacha20's, cb3.blake3 and the
    public methods of every class."""
    found: dict[str, Any] = {}
    for module, names in ((cb3, cb3.__all__), (cb3.chacha20, cb3.chacha20.__all__)):
        for name in names:
            obj = getattr(module, name)
            if callable(obj) and not (isinstance(obj, type) and issubclass(obj, BaseException)):
                found[f"{module.__name__}.{name}"] = obj
    import cb3.blake3 as blake3_module  # the class itself, registered as a module

    found["cb3.blake3 (module)"] = blake3_module
    rows = []
    for qualname, obj in found.items():
        in_ext = getattr(_cb3, getattr(obj, "__name__", ""), None) is obj or obj.__module__.startswith("cb3._cb3")
        stub_name = obj.__name__ if obj.__name__ in STUB_FUNCTIONS or obj.__name__ in STUB_CLASSES else None
        rows.append((qualname, obj, None, stub_name if in_ext or stub_name else None))
        if isinstance(obj, type) and (in_ext or stub_name):
            for name in dir(obj):
                attr = getattr(obj, name)
                if name.startswith("_") or isinstance(attr, type) or not callable(attr):
                    continue
                rows.append((f"{qualname}.{name}", attr, obj.__name__, name))
        elif isinstance(obj, type):  # a class written in Python (typed inline): the methods cb3 defines
            for name in sorted({n for klass in obj.__mro__ if klass.__module__.startswith("cb3.") for n in vars(klass)}):
                attr = getattr(obj, name)
                if name.startswith("_") or isinstance(attr, type) or not callable(attr):
                    continue
                rows.append((f"{qualname}.{name}", attr, None, None))
    return rows


API = public_api()


def test_the_walk_covers_the_api():
    names = {row[0] for row in API}
    for expected in (
        "cb3.ChaCha20Blake3",
        "cb3.ChaCha20Blake3.encrypt_into",
        "cb3.ChaCha20Blake3.generate_nonce",
        "cb3.Stream.decrypt",
        "cb3.blake3.update_mmap",
        "cb3.blake3 (module).hexdigest",
        "cb3.derive_key",
        "cb3.simd_backend",
        "cb3.get_include",
        "cb3.chacha20.ChaCha20.seek",
        "cb3.chacha20.hchacha20",
    ):
        assert expected in names
    assert len(API) >= 45, len(API)


@pytest.mark.parametrize("qualname, obj, stub_class, stub_name", API, ids=[row[0] for row in API])
def test_signature(qualname, obj, stub_class, stub_name):
    sig = inspect.signature(obj)  # raises ValueError where an interpreter has none
    kinds = {p.kind for p in sig.parameters.values()}
    assert not kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}, sig
    doc = inspect.getdoc(obj)
    assert doc and "\n--\n" not in doc and not doc.startswith(f"{obj.__name__}("), doc
    if stub_name is None:  # written in Python: its signature is its source's
        python_class = isinstance(obj, type) and not obj.__module__.startswith("cb3._cb3")
        assert inspect.isfunction(obj) or inspect.ismethod(obj) or python_class, qualname
        return
    if stub_class is None:
        if isinstance(obj, type):
            stub = _stub_params(STUB_CLASSES[stub_name]["__init__"], drop_self=True)
            assert _same(stub, _actual(sig, drop_first=False)), (stub, sig)
        else:
            stub = _stub_params(STUB_FUNCTIONS[stub_name], drop_self=False)
            assert _same(stub, _actual(sig, drop_first=False)), (stub, sig)
        return
    node = STUB_CLASSES[stub_class][stub_name]
    is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    stub = _stub_params(node, drop_self=not is_static)
    assert _same(stub, _actual(sig, drop_first=not is_static)), (stub, sig)


def test_every_extension_name_has_a_stub():
    for name in dir(_cb3):
        obj = getattr(_cb3, name)
        if name.startswith("_") or not callable(obj) or (isinstance(obj, type) and issubclass(obj, BaseException)):
            continue
        if isinstance(obj, type):
            assert name in STUB_CLASSES, name
            for method in (m for m in vars(obj) if not m.startswith("_")):
                if callable(getattr(obj, method)) and not isinstance(getattr(obj, method), type):
                    assert method in STUB_CLASSES[name], f"{name}.{method}"
        else:
            assert name in STUB_FUNCTIONS, name
            inspect.signature(obj)


def test_bound_methods_drop_self():
    cipher = cb3.ChaCha20Blake3(KEY)
    assert str(inspect.signature(cipher.encrypt)) == "(nonce, data, associated_data=None)"
    assert str(inspect.signature(cb3.ChaCha20Blake3)) == "(key, *, max_threads=1)"
    assert str(inspect.signature(cb3.blake3().digest)) == "(length=32, *, seek=0)"
    assert str(inspect.signature(cb3.blake3.update)) == "(self, data, /)"


# ---- the fallback for interpreters that ignore text signatures (PyPy) ----


class FakeMethod:
    """An extension method as PyPy's HPy exposes it: __doc__, no
    __text_signature__, no __name__."""

    def __init__(self, doc: str, result: Any) -> None:
        self.__doc__ = doc
        self.result = result
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return self.result


def test_install_fills_in_where_the_interpreter_does_not():
    import types

    module = types.ModuleType("fake_ext")
    module.hash = FakeMethod("hash(data, length=32)\n--\n\nThe hash.", b"h")  # type: ignore[attr-defined]
    # PyPy's module-level HPy functions: a clean __doc__ and a __text_signature__ that
    # inspect ignores, because the object is not a CPython builtin.
    version = FakeMethod("The version.", "1.0")
    version.__text_signature__ = "()"  # type: ignore[attr-defined]
    module.version = version  # type: ignore[attr-defined]
    module.builtin = len  # type: ignore[attr-defined]  # a real builtin is left alone
    encrypt = FakeMethod("encrypt($self, nonce, data, associated_data=None)\n--\n\nEncrypt.", b"c")

    class Cipher:
        __doc__ = "Cipher(key, *, max_threads=1)\n--\n\nA cipher."

        def __new__(cls, *args: Any, **kwargs: Any) -> Cipher:  # like PyPy's HPy __new__: not a builtin
            return object.__new__(cls)

    Cipher.encrypt = encrypt  # type: ignore[attr-defined]
    Cipher.__module__ = "fake_ext"
    module.Cipher = Cipher  # type: ignore[attr-defined]
    _signatures.install(module)

    assert str(inspect.signature(module.hash)) == "(data, length=32)"
    assert module.hash.__doc__ == "The hash." and module.hash.__name__ == "hash"
    assert module.hash(b"x", length=3) == b"h"
    assert str(inspect.signature(module.version)) == "()" and module.version() == "1.0"
    assert module.version.__doc__ == "The version." and module.builtin is len
    assert str(inspect.signature(Cipher)) == "(key, *, max_threads=1)"
    assert Cipher.__doc__ == "A cipher."
    instance = Cipher()
    assert str(inspect.signature(instance.encrypt)) == "(nonce, data, associated_data=None)"
    assert instance.encrypt(b"n", data=b"d") == b"c"
    assert encrypt.calls[-1] == ((instance, b"n"), {"data": b"d"})  # forwarded unchanged: C parses
    assert Cipher.encrypt.__qualname__ == "Cipher.encrypt"


def test_install_leaves_cpython_builtins_alone():
    if _cb3.OUTPUT_BYTEARRAY_MIN > 0:  # PyPy 8.0: forwarders that make the results bytes
        assert inspect.isfunction(cb3.hash) and cb3.hash is _cb3.hash
        assert inspect.isfunction(vars(cb3.ChaCha20Blake3)["encrypt"])
    elif getattr(_cb3.hash, "__text_signature__", None):  # CPython: the docstring's signature
        assert inspect.isbuiltin(cb3.hash) and cb3.hash is _cb3.hash
        assert type(vars(cb3.ChaCha20Blake3)["encrypt"]).__name__ == "method_descriptor"
    else:  # PyPy 7.3: forwarders
        assert inspect.isfunction(cb3.hash)


def test_install_makes_bytearray_results_bytes():
    """An extension with OUTPUT_BYTEARRAY_MIN set (PyPy 8.0's build) gets a
    forwarder on every public function and method, builtins included, that
    turns bytearray results into bytes, alone or in a tuple, and leaves
    other results, the arguments and the signature as they were."""
    import types

    module = types.ModuleType("fake_ext")
    module.OUTPUT_BYTEARRAY_MIN = 1024  # type: ignore[attr-defined]
    digest = FakeMethod("The hash.", bytearray(b"h" * 2000))
    digest.__text_signature__ = "(data, length=32)"  # type: ignore[attr-defined]
    module.hash = digest  # type: ignore[attr-defined]
    module._private = FakeMethod("No signature: left alone.", bytearray(3))  # type: ignore[attr-defined]
    detached = FakeMethod("encrypt_detached($self, nonce, data)\n--\n\nDetached.", (bytearray(b"c" * 2000), b"t" * 32))
    count = FakeMethod("encrypt_into($self, nonce, data, buf)\n--\n\nInto.", 2032)

    class Cipher:
        pass

    Cipher.encrypt_detached = detached  # type: ignore[attr-defined]
    Cipher.encrypt_into = count  # type: ignore[attr-defined]
    Cipher.upper = str.upper  # type: ignore[attr-defined]  # a method descriptor, as on cpyext
    Cipher.__module__ = "fake_ext"
    module.Cipher = Cipher  # type: ignore[attr-defined]
    _signatures.install(module)

    result = module.hash(b"x", length=2000)
    assert type(result) is bytes and result == b"h" * 2000
    assert digest.calls[-1] == ((b"x",), {"length": 2000})
    assert str(inspect.signature(module.hash)) == "(data, length=32)" and module.hash.__doc__ == "The hash."
    assert inspect.isfunction(vars(Cipher)["upper"]) and Cipher.upper("abc") == "ABC"  # type: ignore[attr-defined]
    assert isinstance(module._private, FakeMethod) and type(module._private()) is bytearray
    ct, tag = Cipher().encrypt_detached(b"n", b"d")  # type: ignore[attr-defined]
    assert type(ct) is bytes and ct == b"c" * 2000 and type(tag) is bytes
    assert Cipher().encrypt_into(b"n", b"d", bytearray(2032)) == 2032  # type: ignore[attr-defined]
    assert Cipher.encrypt_into.__qualname__ == "Cipher.encrypt_into"  # type: ignore[attr-defined]


@pytest.mark.parametrize("length", [0, 1000, 2015, 2016, 2048, 70_000])
def test_every_output_is_bytes(length):
    """Each call that makes new bytes returns exactly bytes, on both sides of
    OUTPUT_BYTEARRAY_MIN (PyPy 8.0's build makes the large ones as
    bytearrays first), with the same contents as the _into form."""
    data = bytes(range(256)) * (length // 256) + bytes(length % 256)
    cipher = cb3.ChaCha20Blake3(KEY)
    sealed = cipher.encrypt(NONCE, data)
    ct, tag = cipher.encrypt_detached(NONCE, data)
    sent = cb3.Stream(KEY, NONCE).encrypt(data)
    into = bytearray(length + 32)
    assert cipher.encrypt_into(NONCE, data, None, into) == length + 32 and sealed == into == ct + tag
    stream_key = bytes(32)
    raw = cb3.chacha20.ChaCha20(stream_key, bytes(12)).update(data)
    raw_into = bytearray(length)
    cb3.chacha20.ChaCha20(stream_key, bytes(12)).update_into(data, raw_into)
    results = {
        "encrypt": sealed,
        "decrypt": cipher.decrypt(NONCE, sealed),
        "encrypt_detached": ct,
        "encrypt_detached tag": tag,
        "decrypt_detached": cipher.decrypt_detached(NONCE, ct, tag),
        "encrypt_in_place tag": cipher.encrypt_in_place(NONCE, bytearray(data)),
        "Stream.encrypt": sent,
        "Stream.decrypt": cb3.Stream(KEY, NONCE).decrypt(sent),
        "ChaCha20.update": raw,
        "blake3.digest": cb3.blake3(data).digest(length),
        "hash": cb3.hash(data, length),
        "keyed_hash": cb3.keyed_hash(KEY, data, length),
        "derive_key": cb3.derive_key("cb3 tests", data, length),
    }
    assert {name: type(value) for name, value in results.items()} == {name: bytes for name in results}
    assert results["decrypt"] == results["decrypt_detached"] == results["Stream.decrypt"] == data
    assert raw == raw_into
    assert results["hash"] == cb3.blake3(data).digest(length) and cb3.blake3(data).hexdigest(length) == results["hash"].hex()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("f()", "()"),
        ("update($self, data, /)", "(self, data, /)"),
        ("encrypt($self, nonce, data, associated_data=None)", "(self, /, nonce, data, associated_data=None)"),
        ("blake3(data=None, /, *, key=None, max_threads=1)", "(data=None, /, *, key=None, max_threads=1)"),
        ("g(a, *args, b=b'x', **kw)", "(a, *args, b=b'x', **kw)"),
    ],
)
def test_parse(text, expected):
    assert str(_signatures.parse(text)) == expected


# ---- messages ----


def test_missing_nonce_message_names_what_happened():
    cipher = cb3.ChaCha20Blake3(KEY)
    with pytest.raises(TypeError) as info:
        cipher.encrypt(b"data only")
    message = str(info.value)
    assert "missing required argument 'data' (pos 2)" in message
    assert "taken as nonce" in message and "encrypt(nonce, data, associated_data=...)" in message
    with pytest.raises(TypeError, match=re.escape("missing required argument 'nonce' (pos 1): encrypt(nonce, data")):
        cipher.encrypt()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: cb3.ChaCha20Blake3(KEY, 2), "ChaCha20Blake3(key, *, max_threads=...)"),
        (lambda: cb3.Stream(KEY, NONCE, 1), "Stream(key, nonce, *, message_index=...)"),
        (lambda: cb3.chacha20.ChaCha20(KEY, NONCE, 1), "ChaCha20(key, nonce, *, counter=..., rounds=...)"),
        (lambda: cb3.blake3(b"", KEY), "blake3(data=..., /, *, key=..."),
        (lambda: cb3.blake3().digest(32, 0), "digest(length=..., *, seek=...)"),
    ],
)
def test_keyword_only_passed_positionally(call, name):
    with pytest.raises(TypeError) as info:
        call()
    message = str(info.value)
    assert "positional argument" in message and "keyword-only" in message and name in message, message


@pytest.mark.parametrize(
    "make, hint",
    [
        (lambda: cb3.ChaCha20Blake3(KEY), "pass the key to the worker and build the cipher there"),
        (lambda: cb3.Stream(KEY, NONCE), "pass the key to the worker and build the cipher there"),
        (lambda: cb3.chacha20.ChaCha20(KEY, NONCE), "pass the key to the worker and build the cipher there"),
        (lambda: cb3.blake3(key=KEY), "hash in the worker"),
    ],
)
def test_pickling_says_what_to_do(make, hint):
    obj = make()
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError, match=rf"^cannot pickle '[\w.]+' object: .*{hint}"):
            pickle.dumps(obj, protocol=protocol)
    with pytest.raises(TypeError, match=hint):
        copy.copy(obj)


def test_loader_error_does_not_send_users_to_pypi():
    message = _guard.mismatch("cb3._cb3", "cpython-311", "0.9.0", "pypy311", "0.9.1.dev61")
    assert message is not None
    assert not re.search(r"pip install (--\S+ )*cb3(?![-\w.])", message), message
    assert "pip install --force-reinstall --no-cache-dir ." in message and ".whl" in message


def test_every_result_code_is_documented():
    """docs/c-api.md's table of result codes is the header's enum, code for code."""
    root = Path(__file__).resolve().parents[2]
    header = dict(re.findall(r"\b(CB3_RESULT_\w+) = (\d+)", (root / "rustlib/include/cb3.h").read_text()))
    table = dict(re.findall(r"^\| `(CB3_RESULT_\w+)` \| (\d+) \|", (root / "docs/c-api.md").read_text(), re.M))
    assert len(header) >= 19
    assert table == header


def test_architecture_lists_the_tree():
    """docs/development.md's Architecture table places every source file of
    the four layers in exactly one cell, and names no file that is missing."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs/development.md").read_text()
    section = text.split("## Architecture\n", 1)[1].split("\n## ", 1)[0]
    layers = ["cb3", "cext", "rustlib/src", "rustlib/core/src"]
    table = [line for line in section.splitlines() if line.startswith("|")]
    rows = [line.split("|")[2:-1] for line in table[2:]]  # after the heading and its rule
    assert len(rows) >= 10
    named: list[Path] = []
    for row in rows:
        assert len(row) == 4, row
        for layer, cell in zip(layers, row):
            for name in re.findall(r"`([^`]+)`", cell):
                path = root / layer / name
                assert path.is_dir() if name.endswith("/") else path.is_file(), f"{layer}/{name} is not in the tree"
                named.append(path)
    sources = {
        p
        for layer, patterns in (
            ("cb3", ("*.py", "*.pyi")),
            ("cext", ("*.c", "*.h")),
            ("rustlib/src", ("*.rs",)),
            ("rustlib/core/src", ("*.rs",)),
        )
        for pattern in patterns
        for p in (root / layer).rglob(pattern)
        if "__pycache__" not in p.parts
    }
    assert len(sources) > 50
    for source in sorted(sources):
        cells = [n for n in named if n == source or n in source.parents]
        assert len(cells) == 1, f"{source.relative_to(root)} is in {len(cells)} cells of the Architecture table"
