"""The signatures of attrs classes in the API reference, with the defaults their source states.

attrs writes each class's ``__init__`` as generated code whose defaults are
``attr_dict['name'].default`` expressions (a plain default) or the ``NOTHING`` sentinel (a
factory, called in the body). Sphinx shows those as they are, in both ways it reads a default
(its source text with ``autodoc_preserve_defaults``, else its repr). This module gives each
parameter of such an ``__init__`` the default its class body writes instead: the expression of
``x: int = 3`` or ``attrs.field(default=3)`` as written, and for a factory what it makes
(``factory=list`` is ``[]``, ``factory=Budget`` is ``Budget()``, a lambda is its body). A field
whose source cannot be read shows its default's repr. ``docs/conf.py`` connects :func:`before_signature`
to autodoc's ``autodoc-before-process-signature`` event.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from typing import Any

import attrs

#: How a factory that is one of these builtins is shown: the empty value it makes.
_EMPTY = {"list": "[]", "dict": "{}", "tuple": "()", "set": "set()", "frozenset": "frozenset()"}


class Shown:
    """A default as text: Sphinx prints a default by its ``repr``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _factory_text(node: ast.expr) -> str:
    """What ``factory=node`` (or ``attrs.Factory(node)``) makes, as source text."""
    if isinstance(node, ast.Lambda):
        return ast.unparse(node.body)
    name = ast.unparse(node)
    return _EMPTY.get(name, f"{name}()")


def _is_call_to(node: ast.expr, *names: str) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in names


def _value_text(value: ast.expr) -> str | None:
    """The default of a field whose class body assigns ``value``; None for a required field."""
    if _is_call_to(value, "Factory"):
        assert isinstance(value, ast.Call)
        return _factory_text(value.args[0]) if value.args else None
    if _is_call_to(value, "field", "ib", "attrib"):
        assert isinstance(value, ast.Call)
        keywords = {k.arg: k.value for k in value.keywords}
        if "default" in keywords:
            return _value_text(keywords["default"])
        if "factory" in keywords:
            return _factory_text(keywords["factory"])
        return None
    return ast.unparse(value)


def _class_body_defaults(cls: type) -> dict[str, str | None]:
    """Field name -> its default as the body of ``cls`` (not its bases) writes it."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    out: dict[str, str | None] = {}
    for node in body.body if body else ():
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = _value_text(node.value)
    return out


def _fallback(default: Any) -> str:
    """A default shown from its value, when its source text is not at hand."""
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        name = getattr(default.factory, "__name__", "")
        return "<computed>" if default.takes_self or name == "<lambda>" else _EMPTY.get(name, f"{name}()")
    return repr(default)


def default_texts(cls: type) -> dict[str, str]:
    """``__init__`` parameter name -> the text of its default, for every attrs field of ``cls``
    that has one (a field's parameter is its alias: ``_x`` takes ``x``)."""
    written: dict[str, str | None] = {}
    for klass in reversed([k for k in cls.__mro__ if attrs.has(k)]):  # a subclass's body wins
        written.update(_class_body_defaults(klass))
    out = {}
    for field in attrs.fields(cls):
        if not field.init or field.default is attrs.NOTHING:
            continue
        text = written.get(field.name)
        out[field.alias or field.name] = text if text is not None else _fallback(field.default)
    return out


def attrs_class_of(init: Any) -> type | None:
    """The attrs class whose generated ``__init__`` this is, else None."""
    code = getattr(init, "__code__", None)
    if code is None or not code.co_filename.startswith("<attrs generated"):
        return None
    owner: Any = importlib.import_module(init.__module__)
    try:
        for part in init.__qualname__.split(".")[:-1]:
            owner = getattr(owner, part)
    except AttributeError:
        return None
    return owner if isinstance(owner, type) and attrs.has(owner) else None


def signature(init: Any) -> inspect.Signature | None:
    """The signature of an attrs-generated ``__init__`` (``self`` included) with the defaults
    its class body writes, else None (not an attrs class's generated ``__init__``)."""
    cls = attrs_class_of(init)
    if cls is None:
        return None
    texts = default_texts(cls)
    sig = inspect.signature(init)
    params = [
        p.replace(default=Shown(texts[p.name])) if p.default is not p.empty and p.name in texts else p
        for p in sig.parameters.values()
    ]
    return sig.replace(parameters=params)


def before_signature(app: Any, obj: Any, bound_method: bool) -> None:
    """autodoc-before-process-signature: give an attrs class's ``__init__`` its real defaults
    (it runs after autodoc_preserve_defaults has set the generated code's text)."""
    sig = signature(obj)
    if sig is not None:
        obj.__signature__ = sig
