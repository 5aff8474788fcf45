"""Assembling the report: one section per question about the run, each skipped with a note
when its data is absent.

Sections, in order: the header (what ran, how long, how fast), learning curves, learner
statistics, ratings, exploitability, the payoff heat map, the family tree, progress
(throughput, league size) and the config. A section whose data is malformed is replaced
by a note naming the error; the rest of the report is still written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from html import escape
from pathlib import Path
from typing import Any

from league.report.data import RunData, load_run
from league.report.family import Family, build_family
from league.report.markup import flatten_config, key_value_table, note, page, section
from league.report.payoff_view import payoff_heatmap
from league.report.plots import Panel, color_map, panels_svg
from league.report.series import (
    EPISODE_STATS,
    Curves,
    is_number,
    nested_curves,
    policy_stats,
    rating_curves,
    scalar_curve,
    x_label,
)
from league.report.tree_svg import family_tree_svg
from league.run.headline import SHAPE_ABOUT, Headline

__all__ = ["render_report", "write_report", "MAX_HEATMAP_PLAYERS"]

#: Players shown in the payoff heat map at most (the most-played ones).
MAX_HEATMAP_PLAYERS = 40
_MAX_STAT_PANELS = 12
_HIGHLIGHTED_RATINGS = 10
_LEADERBOARD_ROWS = 20
# Learner statistics shown first, in this order; any others follow alphabetically.
_STAT_ORDER = ("total_loss", "policy_loss", "vf_loss", "entropy", "approx_kl", "clip_frac", "grad_norm", "q_loss", "td_error")

_Builder = Callable[[RunData, Family], str]


def write_report(run_dir: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """Read ``run_dir`` and write its report to ``out`` (default ``run_dir/report.html``).

    Raises:
        RunDirError: ``run_dir`` is not a run directory.
    """
    run = load_run(run_dir)
    path = Path(out) if out is not None else Path(run_dir) / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(run), encoding="utf-8")
    return path


def render_report(run: RunData) -> str:
    """The report of ``run`` as one self-contained HTML document."""
    family = build_family(run)
    builders: list[tuple[str, str, _Builder]] = [
        ("learning", "Learning curves", _learning),
        ("learner", "Learner statistics", _learner),
        ("ratings", "Ratings", _ratings),
        ("exploitability", "Exploitability", _exploitability),
        ("payoff", "Payoff matrix", _payoff),
        ("family", "Family tree", _family),
        ("progress", "Progress", _progress),
        ("config", "Config", _config),
    ]
    body = [_header(run)]
    for anchor, title, build in builders:
        try:
            content = build(run, family)
        except Exception as err:  # a report of a damaged run still shows every other part
            content = note(f"this section could not be drawn: {type(err).__name__}: {err}")
        body.append(section(anchor, title, content))
    return page(f"league report: {run.name}", body)


# Header -------------------------------------------------------------------------
def _header(run: RunData) -> str:
    summary, last = run.summary or {}, run.last_row()
    policies = run.config_value("policies")
    if isinstance(policies, Mapping) and policies:
        algo: Any = ", ".join(f"{pid}: {_algo_of(pc)}" for pid, pc in policies.items())
    else:
        algo = run.config_value("algo.name")
    wall = summary.get("wall_time_s", last.get("time_s"))
    items = [
        ("run directory", str(run.path)),
        ("env", run.config_value("env.name")),
        ("algorithm", algo),
        ("iterations", summary.get("iterations", last.get("iteration"))),
        ("env steps", summary.get("env_steps", last.get("env_steps"))),
        ("wall time", f"{wall:,.1f} s" if is_number(wall) else None),
        ("env steps / s", summary.get("env_steps_per_s", last.get("env_steps_per_s"))),
        ("headline", _headline_text(summary.get("headline", last.get("headline")))),
        ("headline per side", _headline_sides(summary.get("headline", last.get("headline")))),
        ("win rate vs random", summary.get("win_rates_vs_random", last.get("win_rate_vs_random")) or None),
        ("best win rate vs random", summary.get("best_win_rate_vs_random")),
        ("snapshots held", len(summary["snapshots"]) if isinstance(summary.get("snapshots"), list) else last.get("snapshots")),
        ("league players", last.get("league_players", len(run.population) if run.population is not None else None)),
        ("resumed from", summary.get("resumed_from")),
    ]
    shown = ((k, _header_value(v)) for k, v in items if v is not None)
    parts = [f"<header><h1>Run report: {escape(run.name)}</h1>", key_value_table(shown)]
    parts += [note(n) for n in run.notes]
    return "\n".join(parts) + "</header>"


def _headline(head: Any) -> Headline | None:
    if not isinstance(head, Mapping) or not isinstance(head.get("metric"), str):
        return None
    return Headline.from_dict(head)


def _headline_text(head: Any) -> str | None:
    """The run's headline (league.run.headline) as the final line words it: ``mean return -20.5 (co-op: ...)``."""
    h = _headline(head)
    if h is None:
        return None
    shape = SHAPE_ABOUT.get(h.shape or "", "shape not yet seen")
    return f"{h.label()} {'-' if h.value is None else f'{h.value:.4g}'} ({shape})"


def _headline_sides(head: Any) -> dict[str, float] | None:
    h = _headline(head)
    return dict(h.sides) if h is not None and h.sides else None


def _header_value(value: Any) -> Any:
    """Per-policy dicts as ``a: 0.50, b: 0.25``; large counts with thousands separators."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {v:.2f}" if is_number(v) else f"{k}: {v}" for k, v in value.items())
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return value


def _algo_of(policy_config: Any) -> Any:
    return policy_config.get("algo") if isinstance(policy_config, Mapping) else policy_config


# Curves -------------------------------------------------------------------------
def _colors(family: Family, names: list[str]) -> dict[str, str]:
    """Colors for ``names``; learning players keep the same color in every chart."""
    lanes = [lane.player.player_id for lane in family.lanes]
    return color_map(list(dict.fromkeys(lanes + names)))


def _learning_ids(run: RunData, family: Family, stats: Mapping[str, Curves]) -> list[str]:
    """Learning policies: the family's lanes first, then any other policy with episode stats."""
    ids = [lane.player.player_id for lane in family.lanes if lane.player.player_id in stats]
    ids += [p for p, curves in stats.items() if p not in ids and any(s in curves for s in EPISODE_STATS)]
    return ids


def _learning(run: RunData, family: Family) -> str:
    stats = policy_stats(run.rows)
    win_rates = nested_curves(run.rows, "win_rate_vs_random")
    heads = [r for r in run.rows if _headline(r.get("headline")) is not None]
    head = _headline(heads[-1]["headline"]) if heads else None
    # Each side's headline figure over time, unless it is the win rate against random (its own panel).
    side_curves = nested_curves([{**r, "headline": r["headline"].get("sides")} for r in heads], "headline")
    shown = head is not None and not (head.metric == "win_rate" and head.opponent == "random")
    panels = [
        Panel(f"headline: {head.label()} (evaluation)" if head is not None else "headline", side_curves if shown else {}),
        Panel("episode return (mean)", {p: c["episode_return_mean"] for p, c in stats.items() if "episode_return_mean" in c}),
        Panel("training win share", {p: c["train_win_share"] for p, c in stats.items() if "train_win_share" in c}),
        Panel("win rate vs random (evaluation)", win_rates),
    ]
    panels = [p for p in panels if p.curves]
    if not panels:
        return note("no per-policy episode metrics in metrics.jsonl", skipped=True)
    colors = _colors(family, _learning_ids(run, family, stats) + list(win_rates) + list(side_curves))
    return panels_svg(panels, x_label(run.rows), "fig-learning", colors=colors)


def _learner(run: RunData, family: Family) -> str:
    stats = policy_stats(run.rows)
    parts = []
    first = _learning_ids(run, family, stats)
    for i, pid in enumerate(first + [p for p in stats if p not in first]):
        learner = {s: c for s, c in stats[pid].items() if s not in EPISODE_STATS and not s.startswith("num_")}
        if not learner:
            continue
        ordered = [s for s in _STAT_ORDER if s in learner] + sorted(s for s in learner if s not in _STAT_ORDER)
        panels = [Panel(s.replace("_", " "), {pid: learner[s]}) for s in ordered[:_MAX_STAT_PANELS]]
        parts.append(f"<h3>{escape(pid)}</h3>")
        # One policy per figure, named by the heading: no legend.
        figure = panels_svg(panels, x_label(run.rows), f"fig-learner-{i}", ncols=4, panel_size=(3.0, 2.3), legend_limit=0)
        parts.append(figure)
        if len(ordered) > _MAX_STAT_PANELS:
            parts.append(note(f"{len(ordered) - _MAX_STAT_PANELS} more statistics not shown", skipped=True))
    return "\n".join(parts) or note("no learner statistics in metrics.jsonl", skipped=True)


def _ratings(run: RunData, family: Family) -> str:
    systems = rating_curves(run.rows)
    if not systems:
        return note("no ratings in metrics.jsonl (rows carry them only for league coordinator runs)", skipped=True)
    learning = [lane.player.player_id for lane in family.lanes]
    panels, highlighted = [], []
    for system, curves in sorted(systems.items()):
        stars = [p for p in learning if p in curves]
        if not stars:  # no learning player known: the best ones by their latest rating
            stars = sorted(curves, key=lambda p: -curves[p][1][-1])[:_HIGHLIGHTED_RATINGS]
        highlighted += [p for p in stars if p not in highlighted]
        title = "TrueSkill (conservative: mu - 3 sigma)" if system == "trueskill" else system.capitalize() if system == "elo" else system
        panels.append(Panel(title, curves))
    colors = {p: c for p, c in _colors(family, highlighted).items() if p in highlighted}
    parts = [panels_svg(panels, x_label(run.rows), "fig-ratings", colors=colors, ncols=2, panel_size=(5.6, 3.4))]
    parts.append(note("colored: learning players (or the best-rated ones); grey: every other player, e.g. snapshots", skipped=True))
    parts.append(_leaderboard(run.last_row().get("ratings"), systems))
    return "\n".join(parts)


def _leaderboard(latest: Any, systems: Mapping[str, Curves]) -> str:
    if not isinstance(latest, Mapping):
        return ""
    names = sorted(systems)
    key = "trueskill" if "trueskill" in names else names[0]
    value = latest.get(key)
    table = value if isinstance(value, Mapping) else {}
    players = sorted((p for p in table if is_number(table[p])), key=lambda p: -table[p])
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    rows = []
    for rank, player in enumerate(players[:_LEADERBOARD_ROWS], 1):
        cells = []
        for n in names:
            value = latest.get(n, {}).get(player) if isinstance(latest.get(n), Mapping) else None
            cells.append(f"<td>{value:.1f}</td>" if is_number(value) else "<td></td>")
        rows.append(f"<tr><th>{rank}. {escape(player)}</th>{''.join(cells)}</tr>")
    more = note(f"{len(players) - _LEADERBOARD_ROWS} more players not listed", skipped=True) if len(players) > _LEADERBOARD_ROWS else ""
    return f'<h3>Latest ratings (by {escape(key)})</h3><table class="kv board"><tr><th></th>{head}</tr>{"".join(rows)}</table>{more}'


def _exploitability(run: RunData, family: Family) -> str:
    curves = nested_curves(run.rows, "exploitability")
    if not curves:
        return note("no exploitability in metrics.jsonl", skipped=True)
    positive: Curves = {}
    dropped = 0
    for name, (xs, ys) in curves.items():
        keep = [(x, y) for x, y in zip(xs, ys) if y > 0]
        dropped += len(xs) - len(keep)
        if keep:
            positive[name] = ([x for x, _ in keep], [y for _, y in keep])
    parts = []
    if positive:
        parts.append(
            panels_svg(
                [Panel("exploitability (log scale)", positive, logy=True)],
                x_label(run.rows),
                "fig-exploitability",
                colors=_colors(family, list(positive)),
                ncols=1,
                panel_size=(8.0, 3.4),
            )
        )
    if dropped:
        parts.append(note(f"{dropped} value(s) <= 0 cannot be drawn on a log axis and were left out", skipped=True))
    return "\n".join(parts)


# League -------------------------------------------------------------------------
def _payoff(run: RunData, family: Family) -> str:
    if run.payoff is None:
        return note("no payoff table in summary.json", skipped=True)
    heat = payoff_heatmap(run.payoff, family, MAX_HEATMAP_PLAYERS)
    if heat is None:
        return note("the payoff table holds no games", skipped=True)
    return (note(heat.note) if heat.note else "") + heat.html


def _family(run: RunData, family: Family) -> str:
    if not family.lanes:
        return note("no learning players found", skipped=True)
    parts = [family_tree_svg(family)]
    if family.note:
        parts.append(note(family.note, skipped=True))
    if not any(lane.snapshots for lane in family.lanes):
        parts.append(note("no snapshots in this run", skipped=True))
    return "\n".join(parts)


def _progress(run: RunData, family: Family) -> str:
    panels = []
    throughput = scalar_curve(run.rows, "env_steps_per_s")
    if throughput:
        panels.append(Panel("env steps / s (since start)", {"env steps / s": throughput}))
    size = {k: c for k in ("snapshots", "league_players") if (c := scalar_curve(run.rows, k))}
    if size:
        panels.append(Panel("league size", {k.replace("_", " "): c for k, c in size.items()}))
    if not panels:
        return note("no throughput or league size in metrics.jsonl", skipped=True)
    return panels_svg(panels, x_label(run.rows), "fig-progress", ncols=2, panel_size=(5.6, 2.8))


def _config(run: RunData, family: Family) -> str:
    if not run.config:
        return note("no config in summary.json", skipped=True)
    return key_value_table(flatten_config(run.config))
