"""Checking plain config values against a dataclass's field types, before construction;
and asking an object for an optional method in a way the type checker follows.

Configs arrive as plain dicts (from YAML or the command line). A value of the wrong type
(``num_envs: "4"``, ``lr: "fast"``) must fail with a message naming its key, not later as a
bare comparison ``TypeError``.

Optional hooks (a model's ``value_scale``, a policy's ``action_probabilities``) are declared
as methods of a small Protocol; :func:`has_method` asks an object for one and narrows it to
that Protocol (``if has_method(model, ScaledValues.value_scale): model.value_scale()``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeGuard, TypeVar

__all__ = ["check_field_types", "has_method"]

T = TypeVar("T")
P = ParamSpec("P")


def has_method(obj: object, method: Callable[Concatenate[T, P], Any]) -> TypeGuard[T]:
    """Whether ``obj`` has the optional method that ``method`` references on its Protocol
    (``has_method(model, ScaledValues.value_scale)``); narrows ``obj`` to that Protocol.

    Asks with ``hasattr``, so attributes a wrapper forwards through ``__getattr__`` count
    (unlike ``isinstance`` on a runtime-checkable Protocol, which from Python 3.12 on looks
    attributes up statically)."""
    name = getattr(method, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"expected a method reference such as ScaledValues.value_scale, got {method!r}")
    return hasattr(obj, name)


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is dict or hint is dict:
        return isinstance(value, Mapping)
    if origin in (list, tuple) or hint in (list, tuple):
        return isinstance(value, (list, tuple))
    return True  # Any, ClassVar and richer types: left to the consumer


_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null"}


def _describe(hint: Any) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_describe(h) for h in typing.get_args(hint))
    if typing.get_origin(hint) is dict or hint is dict:
        return "a mapping"
    if typing.get_origin(hint) in (list, tuple) or hint in (list, tuple):
        return "a list"
    return _NAMES.get(hint, str(hint))


def check_field_types(cls: type, values: Mapping[str, Any], where: str) -> None:
    """Raise ``ValueError`` naming ``<where>.<key>`` for the first value whose type does not fit."""
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        hint = hints.get(key)
        if hint is not None and not _matches(value, hint):
            name = f"{where}.{key}" if where else key
            raise ValueError(f"config value {name}={value!r} has type {type(value).__name__}; expected {_describe(hint)}")
