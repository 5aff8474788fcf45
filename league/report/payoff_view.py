"""The payoff heat map: an HTML table of win rates, colored by who wins.

Cell ``[row, column]`` is the row player's win rate against the column player (draws
count half), read with :meth:`PayoffTable.win_rate_matrix`. Pairs with fewer than the
table's ``min_games`` (decayed) games read as the 0.5 prior there; they are shown as
grey dashes, so evidence and prior are never confused. Large leagues are capped to the
most-played players. A table (not an image) keeps the numbers crisp and selectable, and
a cell's tooltip names both players and the games behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np

from league.population.payoff import PayoffTable
from league.report.family import Family, player_order

__all__ = ["HeatMap", "payoff_heatmap", "win_rate_color"]


@dataclass
class HeatMap:
    """The rendered table and what was left out."""

    html: str
    players: list[str]
    note: str | None = None


def win_rate_color(rate: float) -> str:
    """Red (0: the row player always loses) through white (0.5) to blue (1: always wins)."""
    rate = min(max(rate, 0.0), 1.0)
    white, red, blue = np.array([255, 255, 255]), np.array([214, 39, 40]), np.array([31, 119, 180])
    end, t = (blue, (rate - 0.5) * 2) if rate >= 0.5 else (red, (0.5 - rate) * 2)
    r, g, b = (white + (end - white) * t).round().astype(int)
    return f"#{r:02x}{g:02x}{b:02x}"


def _games_per_player(table: PayoffTable, players: list[str]) -> dict[str, float]:
    totals = dict.fromkeys(players, 0.0)
    for i, a in enumerate(players):
        for b in players[i + 1 :]:
            games = table.games(a, b)
            totals[a] += games
            totals[b] += games
    return totals


def payoff_heatmap(table: PayoffTable, family: Family, max_players: int = 40) -> HeatMap | None:
    """The heat map of ``table`` (None when it has no games), players in family order."""
    if max_players < 2:
        raise ValueError(f"max_players must be >= 2, got {max_players}")
    everyone = table.players()
    if not everyone:
        return None
    note = None
    if len(everyone) > max_players:
        totals = _games_per_player(table, everyone)
        kept = sorted(everyone, key=lambda p: (-totals[p], p))[:max_players]
        note = f"showing the {max_players} most-played of {len(everyone)} players"
    else:
        kept = everyone
    order = player_order(family, kept)
    rates = table.win_rate_matrix(order)
    head = "".join(f'<th class="col" title="{escape(p)}">{i + 1}</th>' for i, p in enumerate(order))
    body = [f'<tr><th class="corner">row vs column</th>{head}</tr>']
    for i, a in enumerate(order):
        cells = [f'<th class="rowname" title="{escape(a)}"><span class="idx">{i + 1}</span> {escape(_shorten(a))}</th>']
        for j, b in enumerate(order):
            cells.append(_cell(table, a, b, float(rates[i, j]), i == j))
        body.append("<tr>" + "".join(cells) + "</tr>")
    html = (
        '<div class="scroll"><table class="payoff">' + "\n".join(body) + "</table></div>"
        '<p class="legend"><span class="swatch" style="background:#1f77b4"></span> row player wins'
        ' <span class="swatch" style="background:#fff"></span> even'
        ' <span class="swatch" style="background:#d62728"></span> row player loses'
        f" &middot; &ndash;: fewer than {table.min_games:g} games (decay {table.decay:g}), no estimate"
        " &middot; hover a cell for the games behind it</p>"
    )
    return HeatMap(html=html, players=order, note=note)


def _cell(table: PayoffTable, a: str, b: str, rate: float, diagonal: bool) -> str:
    if diagonal:
        return '<td class="diag"></td>'
    games = table.games(a, b)
    wins, draws, losses = table.counts(a, b)
    if games == 0.0 or games < table.min_games:
        title = escape(f"{a} vs {b}: {games:.1f} games, too few for an estimate")
        return f'<td class="few" title="{title}">&ndash;</td>'
    title = escape(f"{a} vs {b}: win rate {rate:.2f} over {games:.1f} games (W {wins:.1f} / D {draws:.1f} / L {losses:.1f})")
    ink = "#fff" if abs(rate - 0.5) > 0.3 else "#111"
    return f'<td style="background:{win_rate_color(rate)};color:{ink}" title="{title}">{rate:.2f}</td>'


def _shorten(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
