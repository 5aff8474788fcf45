"""Presets: a game's training settings as one named object that every entry point applies.

A game plug-in (``league/games/``) registers a :class:`Preset` in :data:`PRESETS`: config
values in :class:`~league.config.RunConfig`'s shape (``{"algo": {"params": {...}}, "league":
{...}, ...}``) that its league learns best with, and the env names it is for. ``preset``
in the config picks one: ``auto`` (the default) the preset of the run's ``env.name`` if a
plug-in has one, else the first preset declared for the env's kind of game (``matches``:
e.g. ``board_game`` for every two-player zero-sum game of perfect information,
:mod:`league.games.board_game`), ``none`` none, or a preset's name. Any other env gets the
generic defaults, and nothing of another game.

Precedence, the same for ``league-train`` and ``Trainer``: the defaults, then the preset,
then what the user set (:func:`apply_preset` skips every value at or under a key the user
named: ``algo=dqn`` on the command line replaces the preset's whole ``algo`` section,
``algo.params.lr=1e-3`` only its learning rate).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from league.registry import Registry

__all__ = ["PRESETS", "Preset", "apply_preset", "resolve_preset"]


@dataclass(frozen=True)
class Preset:
    """One game's training settings.

    Attributes:
        name: what ``preset=`` takes.
        envs: the ``env.name`` values ``preset=auto`` picks it for.
        values: config values, nested as the run config's sections; a mapping value is merged
            key by key, anything else (an empty mapping included) replaces the default.
        about: one line on what it is and where its figures are.
        matches: ``matches(env_name, env_kwargs)``: whether ``preset=auto`` picks it for an env
            not in any preset's ``envs`` (a kind of game rather than named games; None: only
            ``envs``).
    """

    name: str
    envs: tuple[str, ...]
    values: Mapping[str, Any] = field(default_factory=dict)
    about: str = ""
    matches: Callable[[str, Mapping[str, Any]], bool] | None = None


#: Presets by name.
PRESETS: Registry[Preset] = Registry("preset")


def resolve_preset(choice: str, env_name: str, env_kwargs: Mapping[str, Any] | None = None) -> Preset | None:
    """The preset ``choice`` names for a run of ``env_name`` built with ``env_kwargs``
    (``auto``: the env's own, else the first whose ``matches`` takes the env, else None;
    ``none``: None)."""
    if choice == "none":
        return None
    if choice == "auto":
        presets = [PRESETS.get(n, "preset") for n in PRESETS.names()]
        own = next((p for p in presets if env_name in p.envs), None)
        if own is not None:
            return own
        kwargs = dict(env_kwargs or {})
        return next((p for p in presets if p.matches is not None and p.matches(env_name, kwargs)), None)
    return PRESETS.get(choice, "preset")


def _touched(path: str, touched: Collection[str]) -> bool:
    return any(path == key or path.startswith(key + ".") for key in touched)


def _merge(target: dict[str, Any], values: Mapping[str, Any], prefix: str, touched: Collection[str]) -> None:
    for key, value in values.items():
        path = f"{prefix}{key}"
        if _touched(path, touched):
            continue
        if isinstance(value, Mapping) and value and isinstance(target.get(key), dict):
            _merge(target[key], value, path + ".", touched)
        else:
            target[key] = copy.deepcopy(value)


def apply_preset(values: Mapping[str, Any], touched: Collection[str] = ()) -> dict[str, Any]:
    """``values`` (a config dict of defaults and the user's settings) with its preset merged in
    under every key path in ``touched`` (the keys the user set, dotted: ``algo``,
    ``algo.params.lr``); ``values["preset"]`` becomes the preset's name, or ``none``."""
    out = copy.deepcopy(dict(values))
    env = out.get("env") or {}
    preset = resolve_preset(str(out.get("preset", "auto")), str(env.get("name", "")), env.get("kwargs") or {})
    out["preset"] = "none" if preset is None else preset.name
    if preset is not None:
        _merge(out, preset.values, "", touched)
    return out
