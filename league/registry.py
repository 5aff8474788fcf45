"""Named plug-ins: how a game (the project's own or a user's) reaches the generic core.

The core knows no game. What one game adds (input features its models read, an auxiliary
loss that distils its search, scripted players, a preset of training settings) is
registered under a name in a :class:`Registry`, and configs name it
(``algo.params.model_kwargs.input_features=connect_four_threats``). The seams themselves
(what a registered object must provide) are declared where they are used:
:mod:`league.algos.seams` (model features, auxiliary losses), :mod:`league.population.scripted`
(scripted players), :mod:`league.presets` (presets).

A plug-in registers at import. So that a name resolves in every process (a Ray sampler
builds its models from a config, not from the driver's imports), a registry that misses a
name imports every module declared under the ``league.plugins`` entry-point group, once per
process, and looks again: the project declares its games there (``pyproject.toml``), and a
user's package declares its own the same way. A module can also simply be imported
before the run starts (``env.name=mygame`` imports ``mygame`` in every process that
builds the env).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from typing import Generic, TypeVar

__all__ = ["ENTRY_POINT_GROUP", "Registry", "load_plugins"]

#: The entry-point group whose modules register plug-ins when imported.
ENTRY_POINT_GROUP = "league.plugins"

T = TypeVar("T")

_loaded = False


def load_plugins() -> None:
    """Import every module declared under :data:`ENTRY_POINT_GROUP` (once per process)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        entry.load()


class Registry(Generic[T]):
    """Objects of one kind by name (``kind`` names the kind in error messages)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        """Add ``item`` under ``name``; registering the same object again is a no-op.

        Raises:
            ValueError: ``name`` already holds another object.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} needs a non-empty string name, got {name!r}")
        held = self._items.get(name)
        if held is not None and held is not item:
            raise ValueError(f"{self.kind} {name!r} is already registered ({held!r})")
        self._items[name] = item
        return item

    def get(self, name: str, setting: str) -> T:
        """The object registered as ``name``; ``setting`` is the config key that named it.

        Raises:
            ValueError: no such name, even after loading the plug-ins; the message lists the
                known names and says how a game registers its own.
        """
        if name not in self._items:
            load_plugins()
        if name not in self._items:
            raise ValueError(
                f"{setting}: unknown {self.kind} {name!r}; known: {self.names()}. A game plug-in registers its own "
                f"(docs/PLUGINS.md)"
            )
        return self._items[name]

    def names(self) -> list[str]:
        """Every registered name, the plug-ins' included, sorted."""
        load_plugins()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            load_plugins()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
