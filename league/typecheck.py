"""Checking plain config values against a dataclass's field types, before construction.

Configs arrive as plain dicts (from YAML or the command line). A value of the wrong type
(``num_envs: "4"``, ``lr: "fast"``) must fail with a message naming its key, not later as a
bare comparison ``TypeError``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

__all__ = ["check_field_types"]


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
