"""Agent groups: which agents of an env form one side (a team played by one policy).

RLlib maps agents to policies with a ``policy_mapping_fn``; here the mapping is declared:
``env.groups`` names each group and lists agent-id patterns (``fnmatch``: ``adversary_*``),
and every seat of a group is played by one policy per episode (parameter sharing inside
the team). :func:`resolve_groups` checks such a declaration against an env's agents (every
agent in exactly one group, one spec per group); :func:`auto_groups` proposes groups for an
env whose agents differ in spec, by agent-id prefix (``adversary_0`` -> ``adversary``), so
predator/prey games train without a declaration.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence

from league.envs.base import AgentSpec

__all__ = ["resolve_groups", "auto_groups", "agent_prefix", "group_of"]

_INDEX_SUFFIX = re.compile(r"_?\d+$")


def agent_prefix(agent: str) -> str:
    """``agent`` without a trailing index (``adversary_0`` -> ``adversary``, ``player1`` -> ``player``)."""
    return _INDEX_SUFFIX.sub("", agent) or agent


def resolve_groups(patterns: Mapping[str, Sequence[str]], specs: Mapping[str, AgentSpec], env_name: str = "env") -> dict[str, list[str]]:
    """The agents of each group: ``{group: [agent ids, in env order]}``.

    Args:
        patterns: group -> agent-id patterns (``fnmatch``; a plain id matches itself).
        specs: every agent of the env (in its order) -> its spec.
        env_name: for messages.

    Raises:
        ValueError: an agent in no group or in two, a group matching no agent, or a group
            whose agents differ in spec (one policy cannot play both); each message names
            the agents and says what to write instead.
    """
    if isinstance(patterns, str) or not isinstance(patterns, Mapping):
        raise ValueError(f"env.groups must map group names to lists of agent-id patterns, got {patterns!r}")
    groups: dict[str, list[str]] = {g: [] for g in patterns}
    for agent in specs:
        hits = [g for g, pats in patterns.items() if any(fnmatch.fnmatchcase(agent, p) for p in _as_list(g, pats))]
        if len(hits) > 1:
            raise ValueError(f"env {env_name}: agent '{agent}' matches groups {hits} (env.groups); each agent belongs to one group")
        if not hits:
            raise ValueError(
                f"env {env_name}: agent '{agent}' is in no group of env.groups {dict(patterns)}; "
                f"add a pattern for it (agents: {list(specs)})"
            )
        groups[hits[0]].append(agent)
    for g, members in groups.items():
        if not members:
            raise ValueError(f"env {env_name}: group '{g}' (patterns {list(_as_list(g, patterns[g]))}) matches no agent of {list(specs)}")
        kinds = {specs[a] for a in members}
        if len(kinds) > 1:
            detail = ", ".join(f"{a}: obs {specs[a].obs_shape}, {specs[a].num_actions} actions" for a in members)
            raise ValueError(
                f"env {env_name}: group '{g}' mixes agents with different spaces ({detail}); one policy plays a "
                "whole group, so split it into groups of identical agents (env.groups)"
            )
    return groups


def auto_groups(specs: Mapping[str, AgentSpec]) -> dict[str, list[str]] | None:
    """Groups by agent-id prefix when the agents' specs differ, else None (one symmetric side).

    Returns ``{prefix: [its agent ids]}``, or None when the agents are alike or a prefix
    would mix specs.
    """
    if len(set(specs.values())) <= 1:
        return None
    by_prefix: dict[str, list[str]] = {}
    for agent in specs:
        by_prefix.setdefault(agent_prefix(agent), []).append(agent)
    if any(len({specs[a] for a in members}) > 1 for members in by_prefix.values()):
        return None
    return by_prefix


def group_of(groups: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """agent -> its group, from resolved ``{group: [agents]}``."""
    return {a: g for g, members in groups.items() for a in members}


def _as_list(group: str, pats: Sequence[str] | str) -> list[str]:
    if isinstance(pats, str):
        return [pats]
    if not isinstance(pats, Sequence) or not all(isinstance(p, str) for p in pats):
        raise ValueError(f"env.groups.{group} must be a list of agent-id patterns, got {pats!r}")
    return list(pats)
