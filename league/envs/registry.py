"""``make_env``: build any supported environment from a config name.

A name is resolved in this order:

1. a registered short name (``"connect_four"``, ``"rps"``, ``"cartpole"``...; see
   :func:`registered_env_names`, extend with :func:`register_env`);
2. ``"gymnasium:<id>"``: ``gymnasium.make(<id>, **kwargs)``, adapted as one agent;
3. ``"openspiel:<game>"``: any OpenSpiel game (``openspiel:liars_dice``), by the project's
   own adapter (kwargs are game parameters, plus ``observation``);
4. a module path, dotted (``"pettingzoo.classic.connect_four_v3"``) or top-level (a user's
   ``mygame.py`` on ``sys.path``), whose module exposes ``env()`` (AEC) and/or
   ``parallel_env()``.

Which PettingZoo API is used, unless ``api="aec"|"parallel"`` says so: the only one the
module offers; when it offers both, parallel if its env declares
``metadata["is_parallelizable"]`` (every agent acts every cycle, e.g. rps) and AEC
otherwise (turn-based games such as connect four). An AEC ``env()`` that only wraps a
parallel env (PettingZoo's Atari games) is played through ``parallel_env()``, and a
``parallel_env()`` that is that parallel env wrapped to AEC and back is stepped natively, and
one that is PettingZoo's ``aec_to_parallel`` of an AEC env is rebuilt over that AEC env so that
a step observes each agent once (PettingZoo's observes twice and discards one).
Atari games find the ROMs that the ``ale-py`` wheel ships unless ``auto_rom_install_path`` is given.
The reserved kwarg ``preprocess`` (frame skip, grayscale, resize, frame stack, scale) wraps a
PettingZoo env's observations with SuperSuit (:mod:`league.envs.images`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from league.envs.base import MultiAgentEnv
from league.envs.boards import make_board_env, resolve_backend
from league.envs.gym_env import GymnasiumEnv
from league.envs.pettingzoo_env import PettingZooAECEnv, PettingZooParallelEnv

__all__ = ["make_env", "register_env", "registered_env_names"]

GYMNASIUM_PREFIX = "gymnasium:"
OPENSPIEL_PREFIX = "openspiel:"
_APIS = ("aec", "parallel")

#: Factories registered under a short name: ``factory(**kwargs) -> MultiAgentEnv``.
EnvFactory = Callable[..., MultiAgentEnv]

# Implementation modules rather than the versioned `*_v3` shims, which emit a
# DeprecationWarning on import in PettingZoo >= 1.27.
_REGISTRY: dict[str, str | EnvFactory] = {
    "connect_four": "pettingzoo.classic.connect_four.connect_four",
    "tictactoe": "pettingzoo.classic.tictactoe.tictactoe",
    "rps": "pettingzoo.classic.rps.rps",
    "leduc_holdem": "pettingzoo.classic.rlcard_envs.leduc_holdem",
    "texas_holdem": "pettingzoo.classic.rlcard_envs.texas_holdem",
    "texas_holdem_no_limit": "pettingzoo.classic.rlcard_envs.texas_holdem_no_limit",
    "chess": "pettingzoo.classic.chess.chess",
    "go": "pettingzoo.classic.go.go",
    "cartpole": GYMNASIUM_PREFIX + "CartPole-v1",
}


class _OpenSpielFactory:
    """Builds an :class:`~league.envs.openspiel_env.OpenSpielEnv` of one game (pyspiel imported on use)."""

    def __init__(self, game: str) -> None:
        self.game = game

    def __call__(self, *, api: str | None = None, **kwargs: Any) -> MultiAgentEnv:
        from league.envs.openspiel_env import OpenSpielEnv

        if api is not None:
            raise ValueError(f"env {self.game!r} is an OpenSpiel game; api={api!r} applies to PettingZoo envs only")
        return OpenSpielEnv(self.game, **kwargs)


# OpenSpiel games, under their short name and as "openspiel:<game>".
for _game in ("kuhn_poker", "leduc_poker", "liars_dice"):
    _REGISTRY[_game] = _REGISTRY["openspiel:" + _game] = _OpenSpielFactory(_game)


def openspiel_game_of(name: str) -> str | None:
    """The OpenSpiel game a registered env name stands for (``kuhn_poker``, ``openspiel:leduc_poker``), else None."""
    factory = _REGISTRY.get(name)
    if isinstance(factory, _OpenSpielFactory):
        return factory.game
    if isinstance(name, str) and name.startswith("openspiel:"):
        return name.split(":", 1)[1]
    return None


def registered_env_names() -> list[str]:
    """The registered short names, sorted."""
    return sorted(_REGISTRY)


def register_env(name: str, target: str | EnvFactory, *, overwrite: bool = False) -> None:
    """Register ``name`` for :func:`make_env`.

    Args:
        name: the short name; no ``.`` or ``:`` (those mean module paths and prefixes).
        target: a name :func:`make_env` resolves (module path, ``"gymnasium:<id>"``)
            or a factory called as ``factory(**kwargs)`` with the kwargs given to
            :func:`make_env` (``api``/``max_episode_steps`` included only when given).
        overwrite: replace an existing registration instead of raising.
    """
    if not isinstance(name, str) or not name or "." in name or ":" in name:
        raise ValueError(f"env short name must be a non-empty str without '.' or ':', got {name!r}")
    if not (isinstance(target, str) or callable(target)):
        raise TypeError(f"env target must be a str or a callable, got {type(target).__name__}")
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"env name {name!r} is already registered (pass overwrite=True to replace it)")
    _REGISTRY[name] = target


def make_env(
    name: str, *, api: str | None = None, max_episode_steps: int | None = None, backend: str | None = None,
    **kwargs: Any,
) -> MultiAgentEnv:
    """Build the env called ``name`` (see the module docstring) as a :class:`MultiAgentEnv`.

    Args:
        name: short name, ``"gymnasium:<id>"`` or module path.
        api: ``"aec"`` or ``"parallel"`` to override the PettingZoo API choice.
        max_episode_steps: adapter-level truncation after this many ``step`` calls.
        backend: ``"cpp"`` builds a board game of :mod:`league.envs.boards` (tictactoe,
            connect_four: PettingZoo's rules and observations, stepped in C++), ``"auto"``
            does so when ``name`` has one and no kwargs are given; None or
            ``"pettingzoo"`` resolves ``name`` as below.
        **kwargs: passed to the env constructor (``env()``, ``parallel_env()`` or
            ``gymnasium.make``).

    Raises:
        ValueError: unknown name (the message lists the registered short names), bad
            ``api``, or a module that offers neither ``env()`` nor ``parallel_env()``.
        TypeError: the env constructor rejected ``kwargs``.
    """
    if not isinstance(name, str):
        raise TypeError(f"env name must be a str, got {type(name).__name__}")
    if api is not None and api not in _APIS:
        raise ValueError(f"api must be one of {_APIS} or None, got {api!r}")
    if backend is not None and resolve_backend(name, backend, kwargs, api) == "cpp":
        return make_board_env(name, api, max_episode_steps, kwargs)
    target = _REGISTRY.get(name, name)
    if not callable(target) and target.startswith(OPENSPIEL_PREFIX):
        target = _OpenSpielFactory(target[len(OPENSPIEL_PREFIX):])
    if callable(target):
        options = {k: v for k, v in (("api", api), ("max_episode_steps", max_episode_steps)) if v is not None}
        env = target(**options, **kwargs)
        if not isinstance(env, MultiAgentEnv):
            raise TypeError(f"factory for env {name!r} returned {type(env).__name__}, not a MultiAgentEnv")
        return env
    if target.startswith(GYMNASIUM_PREFIX):
        if api is not None:
            raise ValueError(f"env {name!r} is a Gymnasium env; api={api!r} applies to PettingZoo envs only")
        return _make_gymnasium(name, target[len(GYMNASIUM_PREFIX):], max_episode_steps, kwargs)
    if target and ":" not in target and "/" not in target:
        return _make_pettingzoo(name, target, api, max_episode_steps, kwargs)
    raise ValueError(_unknown(name, "not a registered short name, 'gymnasium:<id>', 'openspiel:<game>' or a module path"))


def _unknown(name: str, why: str) -> str:
    names = ", ".join(registered_env_names())
    return (
        f"unknown env {name!r} ({why}); registered short names: {names}; or a PettingZoo module path "
        "(env.name=pettingzoo.butterfly.pistonball_v6, env.name=mygame for a mygame.py on the Python path), "
        "'gymnasium:<id>' or 'openspiel:<game>'"
    )


def _make_gymnasium(
    name: str, env_id: str, max_episode_steps: int | None, kwargs: dict[str, Any]
) -> MultiAgentEnv:
    import gymnasium

    try:
        env = gymnasium.make(env_id, **kwargs)
    except gymnasium.error.Error as err:  # NameNotFound, VersionNotFound, ...
        raise ValueError(_unknown(name, f"Gymnasium cannot make {env_id!r}: {err}")) from err
    except TypeError as err:
        raise TypeError(
            f"env {name!r}: gymnasium.make({env_id!r}) rejected kwargs {sorted(kwargs)}: {err}"
        ) from err
    return GymnasiumEnv(env, name=name, max_episode_steps=max_episode_steps)


def _make_pettingzoo(
    name: str, path: str, api: str | None, max_episode_steps: int | None, kwargs: dict[str, Any]
) -> MultiAgentEnv:
    module = _import(name, path)
    has_aec = callable(getattr(module, "env", None))
    has_parallel = callable(getattr(module, "parallel_env", None))
    if not (has_aec or has_parallel):
        raise ValueError(f"env {name!r}: module {path} offers neither env() nor parallel_env()")
    auto_api = api is None
    if api is None:
        api = _default_api(module, has_aec, has_parallel)
    if api == "aec" and not has_aec:
        raise ValueError(f"env {name!r}: module {path} has no env() for the AEC API")
    if api == "parallel" and not has_parallel:
        raise ValueError(f"env {name!r}: module {path} has no parallel_env() for the parallel API")
    kwargs = _with_atari_roms(path, kwargs)
    images = kwargs.pop("preprocess", None)  # reserved: SuperSuit image wrappers (league.envs.images)
    env = _construct(name, path, module.env if api == "aec" else module.parallel_env, kwargs)
    if api == "aec" and _wraps_parallel(env):
        if not auto_api:
            env.close()
            raise ValueError(
                f"env {name!r}: {path}.env() only wraps a parallel env (its AEC state is not kept); "
                "leave env.kwargs.api unset or use api=parallel"
            )
        # The parallel env it wraps is the one parallel_env() would build and _native_parallel
        # unwrap: taken as it is, not built a second time (an Atari copy loads its ROM twice).
        native = _parallel_inside_aec(env)
        if native is None:
            env.close()
            native = _construct(name, path, module.parallel_env, kwargs)
        api, env = "parallel", native
    inner_aec = None
    if api == "parallel":
        env = _native_parallel(env)
        inner_aec = _aec_inside_parallel(env)
    byte_images = False
    if images:
        from league.envs.images import keeps_bytes, wrap_each_observation

        if inner_aec is not None:  # on the AEC env it is: SuperSuit would round-trip a parallel one
            inner_aec = wrap_each_observation(inner_aec, images, name)
        else:
            env = wrap_each_observation(env, images, name)
        byte_images = keeps_bytes(inner_aec if inner_aec is not None else env, images)
    if inner_aec is not None:
        from league.envs.observe_once import observe_once_parallel

        env = observe_once_parallel(inner_aec)
    if images:
        from league.envs.images import wrap_over_time

        env = wrap_over_time(env, images, name)
    adapter = PettingZooAECEnv if api == "aec" else PettingZooParallelEnv
    return adapter(env, name=name, max_episode_steps=max_episode_steps, byte_images=byte_images)


def _construct(name: str, path: str, constructor: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    try:
        return constructor(**kwargs)
    except TypeError as err:
        raise TypeError(
            f"env {name!r}: {path}.{constructor.__name__}() rejected kwargs {sorted(kwargs)}: {err}"
        ) from err


def _wraps_parallel(env: Any) -> bool:
    """Whether an AEC env is a parallel env behind ``parallel_to_aec`` (PettingZoo's Atari):
    its unwrapped env keeps no AEC state (``truncations``...) for the adapter to read."""
    try:
        from pettingzoo.utils.env import ParallelEnv
    except ImportError:  # pragma: no cover - pettingzoo is a dependency
        return False
    return isinstance(getattr(env, "unwrapped", None), ParallelEnv)


def _native_parallel(env: Any) -> Any:
    """The parallel env inside a PettingZoo round trip, parallel -> AEC -> parallel, with only
    wrappers between that check calls (order, action bounds: dropping them changes no step):
    ``parallel_env()`` of PettingZoo's Atari games. Each step of the round trip passes every
    agent's action through the AEC API one at a time, more than doubling the cost of a step
    (pong from RAM: 0.31 -> 0.13 ms). Anything else is returned as it is."""
    from pettingzoo.utils.conversions import aec_to_parallel_wrapper

    if not isinstance(env, aec_to_parallel_wrapper):
        return env
    native = _parallel_inside_aec(env.aec_env)
    return env if native is None else native


def _parallel_inside_aec(aec: Any) -> Any | None:
    """The parallel env that an AEC env is ``parallel_to_aec`` of, with only checking wrappers
    (order, action bounds) around it; None for any other AEC env."""
    from pettingzoo.utils.conversions import parallel_to_aec_wrapper
    from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper

    inner = aec
    while isinstance(inner, (OrderEnforcingWrapper, AssertOutOfBoundsWrapper)):
        inner = inner.env
    return inner.env if isinstance(inner, parallel_to_aec_wrapper) else None


def _aec_inside_parallel(env: Any) -> Any | None:
    """The AEC env that a ``parallel_env()`` is PettingZoo's ``aec_to_parallel`` of
    (pistonball, pursuit, MPE...), None for a native parallel env."""
    from pettingzoo.utils.conversions import aec_to_parallel_wrapper

    return env.aec_env if isinstance(env, aec_to_parallel_wrapper) else None


def _with_atari_roms(path: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """PettingZoo Atari kwargs with ``auto_rom_install_path`` set to the ROMs the ``ale-py``
    wheel ships (so no AutoROM download is needed), unless given."""
    if not path.startswith("pettingzoo.atari.") or "auto_rom_install_path" in kwargs:
        return kwargs
    try:
        import ale_py
    except ImportError:
        return kwargs
    roms = Path(ale_py.__file__).parent / "roms"
    return {**kwargs, "auto_rom_install_path": str(roms)} if roms.is_dir() else kwargs


def _import(name: str, path: str) -> ModuleType:
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as err:
        # Only a missing module *on the path itself* means "unknown name"; a missing
        # dependency inside a real env module must surface as the ImportError it is.
        missing = err.name or ""
        if path == missing or path.startswith(missing + "."):
            raise ValueError(_unknown(name, f"no module {path}")) from err
        raise


def _default_api(module: ModuleType, has_aec: bool, has_parallel: bool) -> str:
    if not has_parallel:
        return "aec"
    if not has_aec:
        return "parallel"
    metadata = getattr(getattr(module, "raw_env", None), "metadata", None) or {}
    return "parallel" if metadata.get("is_parallelizable", False) else "aec"
