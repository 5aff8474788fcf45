"""``league-report``: the HTML report of a run directory, from hand-made and real runs.

Hand-made run directories (metrics rows and summary.json written here) pin down what each
section shows, that user strings (policy ids, config values) reach the page only
escaped, that the payoff cells carry the table's numbers, and that absent or damaged
parts are skipped with a note. One test reports on a real, tiny in-process training run.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from league.cli.report import main
from league.population.payoff import PayoffTable
from league.population.players import Player, Population
from league.report import RunDirError, load_run, render_report, write_report
from league.report.family import build_family
from league.report.payoff_view import payoff_heatmap

EVIL = "<script>alert(1)</script>"
EVIL_CONFIG = 'a&b<c>"d"'
DOLLAR = "minimax$x$"
SECTIONS = ("learning", "learner", "ratings", "exploitability", "payoff", "family", "progress", "config")


# Run directories ------------------------------------------------------------------
def _league_population() -> Population:
    pop = Population(
        [
            Player("main_0", "main_0", "learning", role="main"),
            Player(EVIL, EVIL, "learning", role="main_exploiter"),
            Player("random", "random", "scripted", frozen=True),
            Player(DOLLAR, DOLLAR, "scripted", frozen=True),
        ]
    )
    for step in (1000, 2000, 3000):
        pop.snapshot("main_0", step)
    pop.snapshot(EVIL, 1500)
    # A learning player forked from a snapshot: a parent edge in the tree.
    pop.add(Player("main_1", "main_1", "learning", role="main", parent_id="main_0@v1", created_step=2000))
    pop.snapshot("main_1", 3500)
    return pop


def _league_payoff(pop: Population) -> PayoffTable:
    table = PayoffTable(decay=1.0, min_games=4)
    games = [("main_0", "main_0@v0", 6, 1, 1), ("main_0", EVIL, 2, 0, 6), ("main_0", "random", 9, 0, 1),
             (EVIL, "main_0@v1", 3, 3, 2), ("main_1", DOLLAR, 1, 1, 0)]  # the last pair: too few games
    for a, b, wins, draws, losses in games:
        for outcome, n in (("win", wins), ("draw", draws), ("loss", losses)):
            for _ in range(n):
                table.update(a, b, outcome)
    return table


def _write_run(run_dir: Path, rows: list[dict], summary: dict | None) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if summary is not None:
        (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def _league_rows(n: int = 12, ratings: bool = True, exploitability: bool = True) -> list[dict]:
    rows = []
    for i in range(1, n + 1):
        row = {
            "iteration": i, "env_steps": 400 * i, "time_s": 0.5 * i, "env_steps_per_s": 800.0, "episodes": 10,
            "win_rate_vs_random": {"main_0": 0.5 + 0.03 * i, EVIL: 0.4},
            "snapshots": min(i // 3, 4), "league_players": 5 + i // 3,
            "operators": {"TrainOneStep": {"mean_ms": 3.0}},
        }
        for k, pid in enumerate(("main_0", EVIL)):
            row[f"{pid}/episode_return_mean"] = 0.05 * i - 0.1 * k
            row[f"{pid}/train_win_share"] = 0.5
            row[f"{pid}/policy_loss"] = 0.1 / i
            row[f"{pid}/vf_loss"] = 0.5 / i
            row[f"{pid}/entropy"] = 1.0
            row[f"{pid}/num_sgd_updates"] = 3.0
        if ratings:
            row["ratings"] = {
                "elo": {"main_0": 1200 + 5 * i, EVIL: 1200 - 3 * i, "main_0@v0": 1190.0, DOLLAR: 1300.0},
                "trueskill": {"main_0": 1.0 + 0.2 * i, EVIL: 0.5, "main_0@v0": 0.8, DOLLAR: 2.0},
            }
        if exploitability:
            row["exploitability"] = {"main_0": 1.0 / i, "meta_strategy": 0.5 / i}
        rows.append(row)
    return rows


def _league_summary(with_league: bool = True) -> dict:
    pop = _league_population()
    payoff = _league_payoff(pop)
    summary = {
        "iterations": 12, "env_steps": 4800, "wall_time_s": 6.0, "env_steps_per_s": 800.0,
        "win_rates_vs_random": {"main_0": 0.86, EVIL: 0.4}, "best_win_rate_vs_random": 0.86,
        "snapshots": [], "payoff": payoff.to_dict(), "resumed_from": None,
        "config": {"env": {"name": "connect_four", "kwargs": {}}, "algo": {"name": "ppo", "params": {"note": EVIL_CONFIG}},
                   "policies": {}, "league": {"snapshot_steps": 3}, "seed": 0},
    }
    if with_league:
        summary["league"] = {"population": pop.to_dict(), "payoff": payoff.to_dict(),
                             "steps": {"main_0": 4000, EVIL: 2500, "main_1": 4000}}
    return summary


def _small_rows(n: int = 3, **extra) -> list[dict]:
    """Rows with one curve only: each report of them draws a single small chart."""
    return [{"iteration": i, "env_steps": 100 * i, "main/episode_return_mean": 0.1 * i, **extra} for i in range(1, n + 1)]


@pytest.fixture(scope="module")
def league_run(tmp_path_factory) -> Path:
    return _write_run(tmp_path_factory.mktemp("runs") / "league_run", _league_rows(), _league_summary())


@pytest.fixture(scope="module")
def league_html(league_run) -> str:
    """The league run's report, rendered once for the tests that only read it."""
    return render_report(load_run(league_run))


@pytest.fixture
def small_run(tmp_path: Path) -> Path:
    return _write_run(tmp_path / "small_run", _small_rows(), {"config": {"env": {"name": "tictactoe"}}})


class _Collector(HTMLParser):
    """Start tags seen, and the payoff table as {(row, column): cell text}."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.columns: list[str] = []
        self.cells: dict[tuple[str, str], str] = {}
        self._in_payoff = False
        self._row: str | None = None
        self._col = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "table" and a.get("class") == "payoff":
            self._in_payoff = True
        elif self._in_payoff and tag == "th" and a.get("class") == "col":
            self.columns.append(a["title"])
        elif self._in_payoff and tag == "th" and a.get("class") == "rowname":
            self._row, self._col = a["title"], 0
        elif self._in_payoff and tag == "td":
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_payoff = False
        elif tag == "td" and self._cell is not None:
            self.cells[(self._row, self.columns[self._col])] = "".join(self._cell)
            self._col += 1
            self._cell = None


def _parse(html: str) -> _Collector:
    collector = _Collector()
    collector.feed(html)
    return collector


# Sections -------------------------------------------------------------------------
def test_league_report_has_every_section(league_html):
    html = league_html
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in html
    assert "could not be drawn" not in html and "no ratings" not in html and "no exploitability" not in html
    assert html.count('<svg class="chart"') == 6  # learning, 2 learner figures, ratings, exploitability, progress
    assert '<svg class="tree"' in html
    assert "Run report: league_run" in html and "connect_four" in html
    # No external resources: nothing fetched by src/href/url(), no stylesheet links or imports.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|url\((["']?)(https?:|//)|<link|@import""", html)
    assert "<script" not in html.lower().replace("&lt;script", "")


def test_user_strings_reach_the_page_only_escaped(league_html):
    html = league_html
    assert "<script>alert" not in html
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    # Heading, payoff row, tree lane and legend text inside matplotlib's SVG.
    assert html.count(escaped) >= 5
    assert re.search(r"<text[^>]*>[^<]*&lt;script&gt;alert\(1\)", html), "matplotlib SVG text must carry the escaped id"
    assert "a&amp;b&lt;c&gt;&quot;d&quot;" in html and EVIL_CONFIG not in html
    assert "script" not in _parse(html).tags
    # A `$` in an id is drawn as is, not parsed as math.
    assert re.search(r"<text[^>]*>[^<]*minimax\$x\$", html)


def test_every_svg_id_on_the_page_is_unique(league_html):
    ids = re.findall(r'\bid="([^"]+)"', league_html)
    assert ids and len(ids) == len(set(ids))


def test_payoff_cells_carry_the_tables_win_rates(league_run, league_html):
    parsed = _parse(league_html)
    table = load_run(league_run).payoff
    players = table.players()
    assert sorted(parsed.columns) == sorted(players)
    # Tree order: each learning player, then its snapshots, then the fixed opponents.
    assert parsed.columns.index("main_0") < parsed.columns.index("main_0@v0") < parsed.columns.index(EVIL)
    assert parsed.columns.index("main_1") < parsed.columns.index("random")
    assert parsed.cells[("main_0", "main_0@v0")] == "0.81"  # (6 + 0.5) / 8
    assert parsed.cells[("main_0@v0", "main_0")] == "0.19"
    assert parsed.cells[("main_0", EVIL)] == "0.25"
    assert parsed.cells[(EVIL, "main_0@v1")] == f"{table.win_rate(EVIL, 'main_0@v1'):.2f}" == "0.56"
    assert parsed.cells[("main_1", DOLLAR)] == "\u2013"  # 2 games < min_games: no estimate
    assert parsed.cells[("main_0@v0", EVIL)] == "\u2013"  # never played
    assert parsed.cells[("random", "random")] == ""


def test_heatmap_keeps_the_most_played_players(tmp_path):
    table = PayoffTable()
    for i in range(45):
        for _ in range(i + 1):  # player i plays i + 1 games against the hub
            table.update("hub", f"p{i:02d}", "win")
    run = load_run(_write_run(tmp_path / "r", _small_rows(), {"payoff": table.to_dict()}))
    heat = payoff_heatmap(table, build_family(run), 40)
    assert len(heat.players) == 40 and "hub" in heat.players
    assert {"p00", "p01", "p02", "p03", "p04", "p05"}.isdisjoint(heat.players) and "p44" in heat.players
    assert heat.note == "showing the 40 most-played of 46 players"
    html = render_report(run)
    assert "showing the 40 most-played of 46 players" in html and html.count('<th class="rowname"') == 40


def test_family_tree_of_a_league(league_run, league_html):
    family = build_family(load_run(league_run))
    assert [lane.player.player_id for lane in family.lanes] == ["main_0", EVIL, "main_1"]
    assert [s.player_id for s in family.lanes[0].snapshots] == ["main_0@v0", "main_0@v1", "main_0@v2"]
    assert [s.step for s in family.lanes[0].snapshots] == [1000, 2000, 3000]
    assert family.lanes[2].parent_id == "main_0@v1" and family.lanes[0].end_step == 4000
    assert [n.player_id for n in family.fixed] == ["random", DOLLAR]
    assert '<path class="parent"' in league_html and "main_1 started from main_0@v1" in league_html


def test_family_tree_of_a_self_play_pool_is_rebuilt_from_snapshot_ids(tmp_path):
    table = PayoffTable()
    for snap in ("main@v1", "main@v2", "main@v3", "random"):
        table.update("main", snap, "win")
    rows = [{"iteration": i, "env_steps": 100 * i, "main/episode_return_mean": 0.1,
             "new_snapshots": [f"main@v{i // 2}"] if i % 2 == 0 else []} for i in range(1, 7)]
    summary = {"snapshots": ["main@v2", "main@v3"], "payoff": table.to_dict(),
               "config": {"league": {"snapshot_steps": 2, "fixed_opponents": {"random": 0.2}}, "policies": {}}}
    family = build_family(load_run(_write_run(tmp_path / "sp", rows, summary)))
    (lane,) = family.lanes
    assert lane.player.player_id == "main"
    assert [(s.player_id, s.step, s.active) for s in lane.snapshots] == [
        ("main@v1", 200, False), ("main@v2", 400, True), ("main@v3", 600, True)]
    assert [n.player_id for n in family.fixed] == ["random"] and "evicted" in family.note


# Absent and damaged parts ----------------------------------------------------------
def test_sections_without_data_are_skipped_with_a_note(tmp_path):
    run_dir = _write_run(tmp_path / "plain", _league_rows(ratings=False, exploitability=False), _league_summary(with_league=False))
    html = render_report(load_run(run_dir))
    assert "no ratings in metrics.jsonl" in html and "no exploitability in metrics.jsonl" in html
    assert '<table class="payoff">' in html and "could not be drawn" not in html
    assert html.count('<svg class="chart"') == 4


def test_exploitability_values_that_a_log_axis_cannot_show_are_noted(tmp_path):
    rows = [{"iteration": i, "env_steps": 10 * i, "exploitability": {"main_0": 1.0 / i, "meta": 0.5}} for i in range(1, 4)]
    rows[0]["exploitability"] = {"main_0": 0.0, "meta": -1.0}
    html = render_report(load_run(_write_run(tmp_path / "r", rows, None)))
    assert "2 value(s) &lt;= 0 cannot be drawn on a log axis" in html


def test_truncated_metrics_and_missing_summary(tmp_path):
    run_dir = _write_run(tmp_path / "crashed", _small_rows(4), None)
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write('{"iteration": 5, "env_st')  # killed mid-write
    run = load_run(run_dir)
    assert len(run.rows) == 4 and run.summary is None
    html = render_report(run)
    assert "1 line(s) of metrics.jsonl were not JSON objects" in html
    assert "summary.json is missing" in html and "no payoff table" in html and "no config" in html
    assert "<th>env steps</th><td>400</td>" in html  # header from the last row


def test_malformed_summary_parts_become_notes(tmp_path):
    summary = _league_summary()
    summary["payoff"] = {"pairs": [{"a": "x", "b": "y", "wins": -1, "draws": 0, "losses": 0}]}
    summary["league"]["population"] = {"players": [{"player_id": "x"}]}
    rows = _small_rows()
    rows[1]["ratings"] = {"elo": "broken", "trueskill": {"main_0": None}}
    html = render_report(load_run(_write_run(tmp_path / "bad", rows, summary)))
    assert "no ratings in metrics.jsonl" in html
    assert "the payoff table in summary.json could not be read" in html
    assert "the league population in summary.json could not be read" in html
    assert '<section id="config">' in html


@pytest.mark.parametrize("make", ["missing", "file", "empty", "no_rows"])
def test_not_a_run_directory(tmp_path, make):
    path = tmp_path / "run"
    if make == "file":
        path.write_text("x")
    elif make == "empty":
        path.mkdir()
    elif make == "no_rows":
        _write_run(path, [], None)
    with pytest.raises(RunDirError, match=re.escape(str(path))):
        load_run(path)


# CLI ------------------------------------------------------------------------------
def test_cli_writes_the_report_next_to_the_run(small_run, capsys):
    assert main([str(small_run)]) == 0
    out = small_run / "report.html"
    assert out.is_file() and str(out) in capsys.readouterr().out
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_cli_out_option_and_errors(small_run, tmp_path, capsys):
    target = tmp_path / "elsewhere" / "r.html"
    assert main([str(small_run), "--out", str(target)]) == 0 and target.is_file()
    assert not (small_run / "report.html").exists()
    missing = tmp_path / "no_such_run"
    assert main([str(missing)]) == 2
    err = capsys.readouterr().err
    assert "run directory not found" in err and str(missing) in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([str(empty)]) == 2 and str(empty) in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2


def test_cli_cannot_write(small_run, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert main([str(small_run), "--out", str(blocker / "r.html")]) == 1
    assert "cannot write the report" in capsys.readouterr().err


# A real run -----------------------------------------------------------------------
def test_report_of_a_real_in_process_run(tmp_path):
    from league.trainer import Trainer
    from run_helpers import tiny_run_config

    cfg = tiny_run_config(
        algo={"name": "ppo", "params": {"train_batch_size": 64, "minibatch_size": 32, "num_epochs": 1}},
        league={"max_snapshots": 2},
        stop={"iterations": 3},
        checkpoint={"interval": 0},
        logging={"progress": False},
    )
    run_dir = tmp_path / "real"
    trainer = Trainer(cfg, run_dir)
    try:
        trainer.train()
    finally:
        trainer.close()
    path = write_report(run_dir)
    html = path.read_text()
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in html
    assert "could not be drawn" not in html
    assert "tictactoe" in html and "policy loss" in html
    family = build_family(load_run(run_dir))
    assert [s.player_id for s in family.lanes[0].snapshots] == [f"main@v{i}" for i in range(1, 4)]
    assert [s.active for s in family.lanes[0].snapshots] == [False, True, True]
    parsed = _parse(html)
    payoff = PayoffTable.from_dict(json.loads((run_dir / "summary.json").read_text())["payoff"])
    assert sorted(parsed.columns) == payoff.players()
    for (a, b), text in parsed.cells.items():
        if a != b and payoff.games(a, b) >= payoff.min_games:
            assert text == f"{payoff.win_rate(a, b):.2f}"


def test_the_header_and_a_panel_show_the_runs_headline(tmp_path):
    """Issue 38: the report names the run's headline as the final line does, with each side's figure,
    and draws each side's headline figure where it is not the win rate against random."""
    head = {"metric": "return", "shape": "coop", "opponent": "random", "value": -20.5, "best": -19.0,
            "sides": {"speaker": -21.0, "listener": -20.0}}  # fmt: skip
    rows = _small_rows(3, headline=head)
    html = render_report(load_run(_write_run(tmp_path / "coop", rows, {"headline": head, "config": {"env": {"name": "x"}}})))
    assert "mean return -20.5 (co-op: sides rewarded alike)" in html
    assert "speaker: -21" in html and "headline: mean return (evaluation)" in html
