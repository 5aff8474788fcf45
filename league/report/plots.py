"""Line charts as inline SVG, drawn with matplotlib's object API (no pyplot, no global state).

Text stays text (``svg.fonttype: none``): matplotlib XML-escapes it, the browser renders
it, and labels remain searchable. Math parsing is off so a ``$`` in a policy id is shown
as is. Legends get explicit labels, because matplotlib silently drops automatic labels
that start with ``_``. Every id inside a figure is prefixed with the figure's own id, so
several figures inline in one page never share a clip path by accident.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogFormatter, MaxNLocator

from league.report.series import Curves, format_step, thin

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["Panel", "panels_svg", "color_map"]

_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "league-report",  # ids and output stable from run to run
    "text.parse_math": False,
    "font.size": 9,
    "font.family": "sans-serif",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f")
_BACKGROUND = "#c8c8c8"
_MAX_LABEL = 36


@dataclass
class Panel:
    """One set of axes: a title, its curves, and how to scale y."""

    title: str
    curves: Curves
    ylabel: str = ""
    logy: bool = False


def color_map(names: Sequence[str]) -> dict[str, str]:
    """A distinct color per name, in order (cycling past ten names)."""
    return {name: _COLORS[i % len(_COLORS)] for i, name in enumerate(names)}


def _label(name: str) -> str:
    return name if len(name) <= _MAX_LABEL else name[: _MAX_LABEL - 1] + "\u2026"


def panels_svg(
    panels: Sequence[Panel],
    xlabel: str,
    fig_id: str,
    colors: Mapping[str, str] | None = None,
    ncols: int = 3,
    panel_size: tuple[float, float] = (4.0, 2.8),
    legend_limit: int = 12,
) -> str:
    """A grid of line charts as one inline ``<svg>`` element.

    Args:
        panels: the charts, filled row by row.
        xlabel: the shared x axis label.
        fig_id: a page-unique id used to prefix the SVG's internal ids.
        colors: name -> color; curves whose name is missing are drawn thin and grey, as
            background, and left out of the legend. None colors every curve.
        ncols: charts per row.
        panel_size: inches per chart.
        legend_limit: at most this many legend entries per chart (0: no legend).
    """
    if not panels:
        raise ValueError("panels_svg needs at least one panel")

    ncols = max(1, min(ncols, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    with rc_context(_RC):
        fig = Figure(figsize=(panel_size[0] * ncols, panel_size[1] * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, panel in zip(axes, panels):
            _draw(ax, panel, xlabel, colors, legend_limit)
        for ax in axes[len(panels) :]:
            ax.set_visible(False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return _inline(buf.getvalue(), fig_id)


def _draw(ax: Any, panel: Panel, xlabel: str, colors: Mapping[str, str] | None, legend_limit: int) -> None:
    palette = colors if colors is not None else color_map(list(panel.curves))
    handles, labels = [], []
    # Background curves first, so the highlighted ones are drawn on top.
    ordered = sorted(panel.curves.items(), key=lambda item: item[0] in palette)
    for name, curve in ordered:
        xs, ys = thin(curve)
        if name in palette:
            (line,) = ax.plot(xs, ys, color=palette[name], linewidth=1.6, marker="o" if len(xs) == 1 else None)
            handles.append(line)
            labels.append(_label(name))
        else:
            ax.plot(xs, ys, color=_BACKGROUND, linewidth=0.8, marker="o" if len(xs) == 1 else None)
    if panel.logy:
        ax.set_yscale("log")
        # matplotlib's default log labels are mathtext, which is off here (it would parse ids).
        ax.yaxis.set_major_formatter(_plain_log_formatter())
        ax.yaxis.set_minor_formatter(_plain_log_formatter(minor=True))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: format_step(value)))
    ax.set_title(panel.title)
    ax.set_xlabel(xlabel)
    if panel.ylabel:
        ax.set_ylabel(panel.ylabel)
    if handles and legend_limit > 0:
        ax.legend(handles[:legend_limit], labels[:legend_limit], fontsize=7, loc="best", framealpha=0.8)


class _PlainLogFormatter(LogFormatter):
    """Log-axis tick labels as plain numbers (``0.01``), on the ticks matplotlib would label."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:g}" if super().__call__(x, pos) else ""


def _plain_log_formatter(minor: bool = False) -> _PlainLogFormatter:
    return _PlainLogFormatter(labelOnlyBase=not minor, minor_thresholds=(2, 0.5))


_ID = re.compile(r'\bid="([^"]+)"')
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)


def _inline(svg: str, fig_id: str) -> str:
    """The bare ``<svg>`` element with ids made page-unique and a scalable size."""
    svg = svg[svg.index("<svg") :]
    svg = _METADATA.sub("", svg)  # matplotlib's RDF block: namespace URLs and a creator line, nothing drawn
    ids = set(_ID.findall(svg))
    for old in sorted(ids, key=len, reverse=True):
        new = f"{fig_id}-{old}"
        svg = svg.replace(f'id="{old}"', f'id="{new}"').replace(f"#{old})", f"#{new})").replace(f'href="#{old}"', f'href="#{new}"')
    return svg.replace("<svg ", '<svg class="chart" ', 1)
