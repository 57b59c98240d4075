"""Real signatures for the extension's functions, methods and classes.

The C docstrings (cext/*.c) start with a signature in CPython's
``__text_signature__`` convention, ``"encrypt($self, nonce, data,
associated_data=None)\\n--\\n\\n"``. CPython's builtin functions, method
descriptors and types read it, so ``inspect.signature``, ``help()`` and IDEs
show the real parameters there, and ``__doc__`` comes without it.

PyPy's HPy objects (``_hpy_universal``, universal and hybrid ABI) are not
CPython builtins. On PyPy 7.3.19 the methods keep the raw signature line in
``__doc__`` (inspect finds nothing), the module-level functions have a
``__text_signature__`` that inspect ignores (it reports their ``__call__``,
``(*args, **keywords)``), and the classes' HPy ``__new__`` has no signature.
There :func:`install` puts a thin Python function in place of each such
function and method: it forwards ``*args, **kwargs`` unchanged (the C
argument parser and its error messages stay in charge) and carries
``__signature__``, ``__name__``, ``__qualname__`` and the docstring without
the signature line; classes get ``__signature__`` and the cleaned
``__doc__``. PyPy 8.0's cpyext (cb3's cpython-ABI build there) strips the line
as CPython does, but ``inspect.signature`` of a class fails on the type's C
``__new__``: the classes get ``__signature__`` from ``__text_signature__``.
On CPython :func:`install` changes nothing.

Where the extension makes large outputs as private bytearrays (its
``OUTPUT_BYTEARRAY_MIN`` is not 0: PyPy 8.0, where cpyext copies every bytes
object a C function returns; cext/call.h), :func:`install` puts a forwarder
in front of every public function and method, one that also turns those
bytearrays into bytes (:func:`_as_bytes`): inside the interpreter, a copy
that costs a fraction of cpyext's. No function of the extension returns a
bytearray of the caller's, so every bytearray result is one of those.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import inspect

__all__ = ["split_doc", "parse", "install"]

_MARKER = "\n--\n\n"


def split_doc(doc: str | None) -> tuple[str | None, str | None]:
    """``(signature text, rest of the docstring)``; ``(None, doc)`` if the
    docstring does not start with a signature."""
    if not doc or _MARKER not in doc:
        return None, doc
    head, rest = doc.split(_MARKER, 1)
    if "(" not in head or not head.endswith(")") or "\n" in head:
        return None, doc
    return head, rest


def parse(text: str) -> inspect.Signature:
    """The :class:`inspect.Signature` of a text signature such as
    ``"encrypt($self, nonce, data, associated_data=None)"``. ``$self`` becomes a
    positional-only ``self``, as CPython renders it."""
    import ast  # here, not at import time: CPython never needs them
    import inspect

    params = text[text.index("(") :]
    has_self = params.startswith("($self")
    node = ast.parse(f"def f{params.replace('$self', 'self', 1)}: pass").body[0]
    assert isinstance(node, ast.FunctionDef)
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    P = inspect.Parameter

    def default(expr: ast.expr | None) -> Any:
        return P.empty if expr is None else ast.literal_eval(expr)

    out = []
    for i, (arg, expr) in enumerate(zip(positional, defaults)):
        only = i < len(args.posonlyargs) or (has_self and i == 0)
        out.append(P(arg.arg, P.POSITIONAL_ONLY if only else P.POSITIONAL_OR_KEYWORD, default=default(expr)))
    if args.vararg:
        out.append(P(args.vararg.arg, P.VAR_POSITIONAL))
    for arg, expr in zip(args.kwonlyargs, args.kw_defaults):
        out.append(P(arg.arg, P.KEYWORD_ONLY, default=default(expr)))
    if args.kwarg:
        out.append(P(args.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(out)


def _hidden_signature(obj: object) -> tuple[str, str | None] | None:
    """``(signature text, clean docstring)`` for an extension callable whose
    signature inspect would not find; None for anything else. Two cases:
    ``__doc__`` still starts with the signature line (PyPy 7.3.19's HPy
    methods and types), or ``__text_signature__`` is there but on an object
    that inspect does not treat as a builtin (PyPy's module-level HPy
    functions: inspect reports their ``__call__``, ``(*args, **keywords)``).
    CPython's builtins have neither problem."""
    if not callable(obj):
        return None
    text, doc = split_doc(getattr(obj, "__doc__", None))
    if text is not None:
        return text, doc
    text = getattr(obj, "__text_signature__", None)
    if text and not isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType)):
        return text, doc
    return None


def _signature_text(obj: object) -> tuple[str, str | None] | None:
    """``(signature text, clean docstring)`` of any extension callable that
    has one: hidden (above) or in CPython's ``__text_signature__``."""
    found = _hidden_signature(obj)
    if found is None and callable(obj) and getattr(obj, "__text_signature__", None):
        found = obj.__text_signature__, obj.__doc__  # type: ignore[attr-defined]
    return found


def _as_bytes(result: Any) -> Any:
    """The result with the extension's private output bytearrays (also in a
    tuple: ``encrypt_detached``) made bytes."""
    if result.__class__ is bytearray:
        return bytes(result)
    if result.__class__ is tuple:
        return tuple(bytes(item) if item.__class__ is bytearray else item for item in result)
    return result


def _forwarder(target: Callable[..., Any], name: str, qualname: str, module: str, results: bool) -> Callable[..., Any]:
    found = _signature_text(target)
    assert found is not None
    text, doc = found

    if results:

        def forward(*args: Any, **kwargs: Any) -> Any:
            return _as_bytes(target(*args, **kwargs))

    else:

        def forward(*args: Any, **kwargs: Any) -> Any:
            return target(*args, **kwargs)

    forward.__name__ = name
    forward.__qualname__ = qualname
    forward.__module__ = module
    forward.__doc__ = doc
    forward.__signature__ = parse(text)  # type: ignore[attr-defined]
    return forward


def install(module: types.ModuleType) -> None:
    """Gives every function, method and class of the extension ``module`` a
    signature that :func:`inspect.signature` finds (see the module docstring).
    Only acts where the interpreter does not read the docstring signatures,
    or where the extension returns bytearrays for bytes."""
    results = getattr(module, "OUTPUT_BYTEARRAY_MIN", 0) > 0
    for name, obj in list(vars(module).items()):
        if isinstance(obj, type):
            _install_class(obj, results)
        elif _wants_forwarder(name, obj, results):
            setattr(module, name, _forwarder(obj, name, name, module.__name__, results))


def _wants_forwarder(name: str, obj: object, results: bool) -> bool:
    if _hidden_signature(obj) is not None:
        return True
    return results and not name.startswith("_") and _signature_text(obj) is not None


def _install_class(cls: type, results: bool) -> None:
    for name, attr in list(vars(cls).items()):
        if not name.startswith("_") and _wants_forwarder(name, attr, results):
            setattr(cls, name, _forwarder(attr, name, f"{cls.__name__}.{name}", cls.__module__, results))
    # CPython reads a type's signature from tp_doc and strips it from
    # __doc__. Where __doc__ still shows it (PyPy), the class gets
    # __signature__, which inspect consults before the HPy __new__.
    text, doc = split_doc(cls.__doc__)
    if text is not None:
        cls.__signature__ = parse(text)  # type: ignore[attr-defined]
        cls.__doc__ = doc
    elif sys.implementation.name == "pypy":
        # PyPy 8.0's cpyext (the cpython ABI) moves the line into __text_signature__ as
        # CPython does, but inspect asks the type's C-level __new__ first there: a builtin
        # with no signature, so inspect.signature(cls) raised ValueError.
        text = getattr(cls, "__text_signature__", None)
        if text:
            cls.__signature__ = parse(text)  # type: ignore[attr-defined]
