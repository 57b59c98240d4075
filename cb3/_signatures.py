"""Real signatures for the extension's functions, methods and classes.

The C docstrings (cext/*.c) start with a signature in CPython's
``__text_signature__`` convention, ``"encrypt($self, nonce, data,
associated_data=None)\\n--\\n\\n"``. CPython's builtin functions, method
descriptors and types read it, so ``inspect.signature``, ``help()`` and IDEs
show the real parameters there, and ``__doc__`` comes without it.

PyPy's HPy objects (``_hpy_universal``, universal and hybrid ABI) are not
CPython builtins: PyPy 7.3.19 keeps the raw signature line in ``__doc__``,
and ``inspect.signature`` reports ``(*args, **keywords)`` for module-level
functions (their ``__call__``) and fails for the classes (an HPy ``__new__``).
Wherever ``__doc__`` still starts with the signature line, :func:`install` puts a
thin Python function in place of each extension function and method: it
forwards ``*args, **kwargs`` unchanged (the C argument parser and its error
messages stay in charge) and carries ``__signature__``, ``__name__``,
``__qualname__`` and the docstring without the signature line. Classes get
``__signature__`` and the cleaned ``__doc__``. On CPython :func:`install`
changes nothing.
"""

from __future__ import annotations

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


def _needs_help(obj: object) -> bool:
    """True for an extension callable whose ``__doc__`` still starts with the
    signature line: the interpreter did not take the signature from it.
    CPython strips it from ``__doc__`` (and serves it as
    ``__text_signature__``); PyPy 7.3.19 shows it for module-level HPy
    functions, whose ``__text_signature__`` inspect does not consult."""
    return callable(obj) and split_doc(getattr(obj, "__doc__", None))[0] is not None


def _forwarder(target: Callable[..., Any], name: str, qualname: str, module: str) -> Callable[..., Any]:
    text, doc = split_doc(target.__doc__)
    assert text is not None

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
    Only acts where the interpreter does not read the docstring signatures."""
    for name, obj in list(vars(module).items()):
        if isinstance(obj, type):
            _install_class(obj)
        elif _needs_help(obj):
            setattr(module, name, _forwarder(obj, name, name, module.__name__))


def _install_class(cls: type) -> None:
    for name, attr in list(vars(cls).items()):
        if not name.startswith("_") and _needs_help(attr):
            setattr(cls, name, _forwarder(attr, name, f"{cls.__name__}.{name}", cls.__module__))
    # CPython reads a type's signature from tp_doc and strips it from
    # __doc__. Where __doc__ still shows it (PyPy), the class gets
    # __signature__, which inspect consults before the HPy __new__.
    text, doc = split_doc(cls.__doc__)
    if text is not None:
        cls.__signature__ = parse(text)  # type: ignore[attr-defined]
        cls.__doc__ = doc
