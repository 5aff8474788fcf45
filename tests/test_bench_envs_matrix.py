"""benchmarks/bench_envs_matrix.py: random play's figure, the baseline a run's headline improves on."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from league.envs.base import AgentSpec

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_envs_matrix.py"
_spec = importlib.util.spec_from_file_location("bench_envs_matrix", _SCRIPT)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

_BIG, _SMALL = AgentSpec((4,), 5, False), AgentSpec((3,), 5, False)


def _episode(returns: dict[str, float]) -> dict:
    from league.sampling.batched_runner import episode_record

    return episode_record(0, 10, returns, {})


def test_side_agents_from_groups_policies_or_none():
    agents = {"adversary_0": _BIG, "agent_0": _SMALL, "agent_1": _SMALL}
    proposed = {"env": {"groups": {}}}  # agents that differ: grouped by prefix
    assert bench.side_agents("adversary", proposed, agents) == ["adversary_0"]
    assert bench.side_agents("agent", proposed, agents) == ["agent_0", "agent_1"]
    declared = {"env": {"groups": {"hunter": ["adversary_*"], "prey": ["agent_*"]}}, "policies": {"h": {"group": "hunter"}}}
    assert bench.side_agents("h", declared, agents) == ["adversary_0"]
    alike = {"a": _SMALL, "b": _SMALL}
    assert bench.side_agents("main", {"env": {"groups": {}}}, alike) is None  # one symmetric side: any seat


def test_random_play_figure_per_side_and_seat():
    agents = {"adversary_0": _BIG, "agent_0": _SMALL, "agent_1": _SMALL}
    played = [_episode({"adversary_0": -10.0, "agent_0": 2.0, "agent_1": 4.0}), _episode({"adversary_0": -20.0, "agent_0": 6.0, "agent_1": 8.0})]
    head = {"metric": "return", "opponent": "random", "sides": {"adversary": 0.0, "agent": 0.0}}
    fig = bench.random_play_figure(head, {"env": {"groups": {}}}, agents, played)
    assert fig["sides"] == {"adversary": -15.0, "agent": 5.0}  # a team's return: its seats' mean
    assert fig["value"] == -5.0 and fig["episodes"] == 2 and fig["stderr"] > 0
    # A symmetric side's win rate: each seat of each game (draws are not wins).
    alike = {"a": _SMALL, "b": _SMALL}
    games = [_episode({"a": 1.0, "b": -1.0}), _episode({"a": 0.0, "b": 0.0}), _episode({"a": -1.0, "b": 1.0})]
    wins = bench.random_play_figure({"metric": "win_rate", "opponent": "random", "sides": {"main": 0}}, {"env": {"groups": {}}}, alike, games)
    assert wins["value"] == pytest.approx(2 / 6, abs=1e-4)
    # Against a scripted yardstick: the random player's seats only; games of random players
    # alone say nothing about it, and an exact measure has no random-play figure here.
    negamax = {"metric": "win_rate", "opponent": "negamax", "sides": {"main": 0}}
    assert bench.random_play_figure(negamax, {"env": {"groups": {}}}, alike, games) is None
    seated = [{**g, "policies": {"a": bench.LEARNER, "b": "negamax"}} for g in games]
    assert bench.random_play_figure(negamax, {"env": {"groups": {}}}, alike, seated)["value"] == pytest.approx(1 / 3, abs=1e-4)
    assert bench.random_play_figure({"metric": "exploitability", "opponent": "random", "sides": {}}, {"env": {"groups": {}}}, alike, games) is None


def test_z_vs_random_play():
    last = {"value": 3.0, "stdev": 2.0, "evaluations": 4}
    base = {"value": 1.0, "stderr": 0.0}
    assert bench.z_vs_random_play(last, base) == 2.0  # (3 - 1) / (2 / sqrt 4)
    assert bench.z_vs_random_play({**last, "value": -1.0}, base) == -2.0
    assert bench.z_vs_random_play({**last, "stdev": None}, base) is None
    assert bench.z_vs_random_play(last, None) is None


def test_random_play_on_tictactoe():
    speed, played, agents = bench.random_play("tictactoe", {}, 0.05, episodes=300, cap_s=20.0)
    assert speed > 0 and len(played) >= 300 and list(agents) == ["player_1", "player_2"]
    fig = bench.random_play_figure({"metric": "win_rate", "opponent": "random", "sides": {"main": 0}}, {"env": {"groups": {}}}, agents, played)
    assert 0.35 < fig["value"] < 0.5  # the first player wins about 58%, the second 29%


def test_yardstick_play_seats_random_play_against_the_scripted_player():
    values = {"env": {"name": "tictactoe", "kwargs": {}}, "league": {"negamax_depth": 2}}
    games = bench.yardstick_play(values, "minimax", seconds=0.0, episodes=10)
    assert len(games) == 10 and all(list(g["policies"].values()).count(bench.LEARNER) == 1 for g in games)
    assert {next(a for a, p in g["policies"].items() if p == bench.LEARNER) for g in games} == {"player_1", "player_2"}
    head = {"metric": "win_rate", "opponent": "minimax", "sides": {"main": 0}}
    agents = {a: None for a in ("player_1", "player_2")}
    assert bench.random_play_figure(head, {"env": {"groups": {}}}, agents, games)["value"] == 0.0  # perfect play never loses


def test_rescore_refuses_lines_that_are_not_the_benchs_rows(tmp_path):
    import subprocess
    import sys

    for text, message in (("not json\n", "line 1 is not JSON"), ('{"entry": "env:x"}\n', "line 1 has no 'overrides' list")):
        rows = tmp_path / "rows.jsonl"
        rows.write_text(text)
        out = subprocess.run([sys.executable, str(_SCRIPT), "--rescore", str(rows)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and message in out.stderr, out.stderr
