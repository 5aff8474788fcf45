"""Drawing a plan as text: chains on one line, merges as an indented tree.

A linear plan reads ``ParallelRollouts(2 samplers, bulk_sync) -> ConcatBatches(4000) ->
TrainOneStep(...)``. A merge is drawn as its label followed by its numbered branches,
indented, and then the chain that follows it::

    Concurrently(round_robin, output_indexes=[1])
      [0] ParallelRollouts(2 samplers, bulk_sync) -> Duplicate(copy 0 of 2) -> StoreToReplayBuffer
      [1] (same upstream as copy 0) -> Duplicate(copy 1 of 2) -> TrainOneStep
    -> StandardMetricsReporting

The upstream of a duplicated stream is drawn once, at the first copy met.
"""

from __future__ import annotations

from league.flow.branches import DuplicateCopy
from league.flow.stages import Stage

__all__ = ["draw"]

_BRANCH_INDENT = "      "


def draw(stage: Stage) -> str:
    """The plan ending at ``stage`` as text."""
    return "\n".join(_lines(stage, {}))


def _lines(stage: Stage, shown: dict[int, int]) -> list[str]:
    # Walk upstream to the head of this chain: a source, a merge, or a copy whose
    # upstream is already drawn. ``shown`` maps a duplicated stream to its drawn copy.
    chain: list[Stage] = []
    node = stage
    prefix = ""
    while True:
        chain.append(node)
        if isinstance(node, DuplicateCopy):
            key = id(node.shared)
            if key in shown:
                prefix = f"(same upstream as copy {shown[key]}) -> "
                break
            shown[key] = node.index
        if len(node.parents) != 1:
            break
        node = node.parents[0]
    chain.reverse()
    head = chain[0]
    if prefix or len(head.parents) <= 1:
        return [prefix + " -> ".join(s.label for s in chain)]
    lines = [head.label]
    for i, branch in enumerate(head.parents):
        sub = _lines(branch, shown)
        lines.append(f"  [{i}] {sub[0]}")
        lines.extend(_BRANCH_INDENT + line for line in sub[1:])
    if len(chain) > 1:
        lines.append("-> " + " -> ".join(s.label for s in chain[1:]))
    return lines
