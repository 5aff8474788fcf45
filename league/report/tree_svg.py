"""Drawing the family tree as inline SVG (hand-written: every label is escaped here).

Each learning player is a horizontal lane: a square where it starts, a line to its latest
step, and its snapshots as circles along the line (hollow grey when evicted). A dashed
curve joins a player that started from another player (``parent_id``) to that parent.
Fixed opponents sit in a row of boxes below. When every node has a step, x is that step
(with an axis); otherwise snapshots are spaced evenly in order. Hovering a node shows its
full id and step (SVG ``<title>``, no script needed).
"""

from __future__ import annotations

import math
from html import escape

from league.report.family import Family, Lane, TreeNode, steps_known
from league.report.series import format_step

__all__ = ["family_tree_svg", "nice_ticks"]

_WIDTH = 1100
_LABEL_W = 220
_RIGHT = 50
_TOP = 28
_LANE_H = 62
_AXIS_H = 44
_FIXED_H = 54
_MIN_LABEL_GAP = 30  # px between snapshot labels; closer ones go unlabelled (the title still names them)
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """About ``count`` round tick values covering ``[low, high]``."""
    if high <= low:
        return [low]
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class _Scale:
    """Maps a node to its x pixel: by step, or by position in its lane."""

    def __init__(self, family: Family) -> None:
        self.by_step = steps_known(family)
        left, right = _LABEL_W + 20, _WIDTH - _RIGHT
        if self.by_step:
            # by_step: every node has a step (steps_known)
            values = [float(n.step) for lane in family.lanes for n in (lane.player, *lane.snapshots) if n.step is not None]
            values += [float(lane.end_step) for lane in family.lanes if lane.end_step is not None]
            self.low, self.high = min(values), max(values)
        else:
            self.low, self.high = 0.0, float(max([len(lane.snapshots) + 1 for lane in family.lanes] + [1]))
        self.left, self.right = left, right

    def x(self, value: float) -> float:
        span = self.high - self.low
        return self.left if span <= 0 else self.left + (value - self.low) / span * (self.right - self.left)

    def node_x(self, lane: Lane, index: int) -> float:
        """x of the lane's player (index 0) or of its snapshot ``index - 1``."""
        node = lane.player if index == 0 else lane.snapshots[index - 1]
        return self.x(float(node.step)) if self.by_step and node.step is not None else self.x(float(index))

    def end_x(self, lane: Lane) -> float:
        """Where the lane's line ends: past its latest step and its last node, arrow clear of it."""
        last = self.node_x(lane, len(lane.snapshots))
        if self.by_step and lane.end_step is not None:
            last = max(self.x(float(lane.end_step)), last)
        return last + 24


def _node_title(node: TreeNode, parent: str | None, label: str) -> str:
    parts = [node.player_id, node.kind]
    if node.role:
        parts.append(f"role {node.role}")
    if parent:
        parts.append(f"from {parent}")
    if node.step is not None:
        parts.append(f"{label} {node.step:,}")
    if not node.active:
        parts.append("evicted")
    return escape(" \u00b7 ".join(parts))


def family_tree_svg(family: Family) -> str:
    """The tree as one ``<svg>`` element (no external references)."""
    scale = _Scale(family)
    lanes_h = len(family.lanes) * _LANE_H
    axis_h = _AXIS_H if scale.by_step else 8
    fixed_rows = _fixed_rows(family.fixed)
    height = _TOP + lanes_h + axis_h + len(fixed_rows) * _FIXED_H + 10
    out = [
        f'<svg class="tree" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" '
        f'width="{_WIDTH}" height="{height}" role="img" aria-label="family tree of league players">',
        '<defs><marker id="tree-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" markerHeight="5" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    positions: dict[str, tuple[float, float]] = {}
    for i, lane in enumerate(family.lanes):
        positions.update(_lane_positions(lane, scale, _TOP + i * _LANE_H + _LANE_H / 2))
    fixed_top = _TOP + lanes_h + axis_h
    positions.update(_fixed_positions(fixed_rows, fixed_top))
    out.extend(_parent_edges(family, positions))
    for i, lane in enumerate(family.lanes):
        out.extend(_lane(lane, scale, _TOP + i * _LANE_H + _LANE_H / 2, _PALETTE[i % len(_PALETTE)], family.step_label))
    if scale.by_step:
        out.extend(_axis(scale, _TOP + lanes_h + 6, family.step_label))
    out.extend(_fixed(fixed_rows, fixed_top))
    out.append("</svg>")
    return "\n".join(out)


def _lane_positions(lane: Lane, scale: _Scale, y: float) -> dict[str, tuple[float, float]]:
    nodes = (lane.player, *lane.snapshots)
    return {node.player_id: (scale.node_x(lane, i), y) for i, node in enumerate(nodes)}


def _lane(lane: Lane, scale: _Scale, y: float, color: str, step_label: str) -> list[str]:
    player = lane.player
    x0, x_end = scale.node_x(lane, 0), scale.end_x(lane)
    label = escape(_shorten(player.player_id, 28))
    out = [f'<g class="lane"><title>{_node_title(player, lane.parent_id, step_label)}</title>']
    role = f'<tspan x="{_LABEL_W}" dy="15" class="role">{escape(_shorten(player.role, 30))}</tspan>' if player.role else ""
    out.append(f'<text x="{_LABEL_W}" y="{y - (3 if role else -4):.1f}" text-anchor="end" class="player">{label}{role}</text>')
    out.append(
        f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x_end:.1f}" y2="{y:.1f}" stroke="{color}" stroke-width="3" '
        'marker-end="url(#tree-arrow)"/>'
    )
    out.append(f'<rect x="{x0 - 7:.1f}" y="{y - 7:.1f}" width="14" height="14" fill="{color}"/></g>')
    last_label = -math.inf
    for i, snap in enumerate(lane.snapshots):
        x = scale.node_x(lane, i + 1)
        fill, stroke = (color, "#fff") if snap.active else ("#fff", "#999")
        out.append(
            f'<g class="snapshot"><title>{_node_title(snap, player.player_id, step_label)}</title>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{fill}" stroke="{stroke}" stroke-width="2"/></g>'
        )
        if x - last_label >= _MIN_LABEL_GAP:
            out.append(f'<text x="{x:.1f}" y="{y - 12:.1f}" text-anchor="middle" class="version">{escape(_short_id(snap, player))}</text>')
            last_label = x
    return out


def _short_id(snap: TreeNode, parent: TreeNode) -> str:
    """``main_0@v3`` under lane ``main_0`` reads ``v3``."""
    prefix = f"{parent.player_id}@"
    return _shorten(snap.player_id[len(prefix) :] if snap.player_id.startswith(prefix) else snap.player_id, 10)


def _parent_edges(family: Family, positions: dict[str, tuple[float, float]]) -> list[str]:
    out = []
    for lane in family.lanes:
        if lane.parent_id is None or lane.parent_id not in positions:
            continue
        (px, py), (cx, cy) = positions[lane.parent_id], positions[lane.player.player_id]
        bend = (cy - py) * 0.5
        out.append(
            f'<path class="parent" d="M{px:.1f},{py:.1f} C{px:.1f},{py + bend:.1f} {cx - 30:.1f},{cy - bend:.1f} {cx - 9:.1f},{cy:.1f}" '
            'fill="none" stroke="#555" stroke-width="1.5" stroke-dasharray="5 4" marker-end="url(#tree-arrow)">'
            f"<title>{escape(lane.player.player_id)} started from {escape(lane.parent_id)}</title></path>"
        )
    return out


def _axis(scale: _Scale, y: float, label: str) -> list[str]:
    out = [f'<line x1="{scale.left}" y1="{y:.1f}" x2="{scale.right}" y2="{y:.1f}" stroke="#888"/>']
    for tick in nice_ticks(scale.low, scale.high):
        x = scale.x(tick)
        out.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{y + 5:.1f}" stroke="#888"/>')
        out.append(f'<text x="{x:.1f}" y="{y + 17:.1f}" text-anchor="middle" class="tick">{escape(format_step(tick))}</text>')
    out.append(f'<text x="{scale.right}" y="{y + 34:.1f}" text-anchor="end" class="axis">{escape(label)}</text>')
    return out


def _fixed_rows(fixed: list[TreeNode]) -> list[list[tuple[TreeNode, float, float]]]:
    """Boxes ``(node, x, width)`` wrapped into rows that fit the width."""
    rows: list[list[tuple[TreeNode, float, float]]] = []
    x: float = _WIDTH  # forces a new row for the first box
    for node in fixed:
        width = 16 + 7.2 * len(_shorten(node.player_id, 32))
        if x + width > _WIDTH - _RIGHT:
            rows.append([])
            x = _LABEL_W + 20
        rows[-1].append((node, x, width))
        x += width + 12
    return rows


def _fixed_positions(rows: list[list[tuple[TreeNode, float, float]]], top: float) -> dict[str, tuple[float, float]]:
    return {node.player_id: (x + w / 2, top + r * _FIXED_H + 12) for r, row in enumerate(rows) for node, x, w in row}


def _fixed(rows: list[list[tuple[TreeNode, float, float]]], top: float) -> list[str]:
    out = []
    if rows:
        out.append(f'<text x="{_LABEL_W}" y="{top + 30:.1f}" text-anchor="end" class="player">fixed opponents</text>')
    for r, row in enumerate(rows):
        y = top + r * _FIXED_H + 12
        for node, x, width in row:
            out.append(
                f'<g class="fixed"><title>{_node_title(node, None, "step")}</title>'
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="26" rx="4" fill="#f3f3f3" stroke="#999"/>'
                f'<text x="{x + width / 2:.1f}" y="{y + 17:.1f}" text-anchor="middle" class="fixedname">'
                f"{escape(_shorten(node.player_id, 32))}</text></g>"
            )
    return out
