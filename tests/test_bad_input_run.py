"""Bad run inputs of issue 38, each refused before Ray starts (exit 2) with the values it rejects:
a wrongly typed env kwarg, fixed shares past 1, an exact meta-game on a game with no OpenSpiel
tree; and the experiment files' "no fixed member", which Hydra's merge used to turn into one."""

from __future__ import annotations

from pathlib import Path

import pytest

from league.cli.train import config_dir, run_job
from league.config import parse_run_config
from run_helpers import composed_values


def _refused(values: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``run_job``'s stderr for ``values``, which must exit 2 having written nothing."""
    with pytest.raises(SystemExit) as exit_info:
        run_job(values, str(tmp_path / "run"))
    assert exit_info.value.code == 2
    assert not (tmp_path / "run").exists(), "refused before the run directory (and Ray) exists"
    return capsys.readouterr().err


def test_a_wrongly_typed_env_kwarg_is_named_before_ray_starts(tmp_path, capsys):
    # rps stores max_cycles unread until its first step: the constructor alone accepts "abc".
    err = _refused({"env": {"name": "rps", "kwargs": {"max_cycles": "abc", "num_actions": 3}}}, tmp_path, capsys)
    assert "invalid config" in err and "env 'rps'" in err
    assert "env.kwargs max_cycles='abc' (str)" in err, "names the kwarg its type error points at, not every kwarg"
    assert "num_actions" not in err
    parse_run_config({"env": {"name": "rps", "kwargs": {"max_cycles": 5}}})  # a right one passes the probe


def test_fixed_shares_past_one_are_refused_with_their_values(tmp_path, capsys):
    err = _refused({"league": {"fixed_opponents": {"random": 0.9}, "self_play_prob": 0.3}}, tmp_path, capsys)
    assert "league.fixed_opponents {'random': 0.9} plus league.self_play_prob 0.3 sum to 1.2 > 1" in err
    with pytest.raises(ValueError, match=r"league.fixed_opponents.random must be a share in \[0, 1\], got -0.1"):
        parse_run_config({"league": {"fixed_opponents": {"random": -0.1}}})


def test_a_zero_share_is_no_member():
    cfg = parse_run_config({"league": {"fixed_opponents": {"random": 0.0}, "self_play_prob": 1.0}})
    assert cfg.league.fixed_opponents == {}


def test_an_exact_meta_game_needs_an_openspiel_game_before_ray_starts(tmp_path, capsys):
    values = composed_values("env=tictactoe", "league=psro", "league.meta_game=exact", "sampler.remote=false")
    err = _refused(values, tmp_path, capsys)
    assert "league.meta_game=exact" in err and "env 'tictactoe' has neither" in err and "league.meta_game=empirical" in err
    with pytest.raises(ValueError, match=r"league.exploitability_interval=2 .* env 'tictactoe' has neither"):
        parse_run_config(composed_values("env=tictactoe", "league.exploitability_interval=2"))
    # The exact path scores the whole game: an env that truncates it is refused too.
    with pytest.raises(ValueError, match=r"env.kwargs.max_episode_steps=2 truncates 'kuhn_poker' episodes.*raise it to"):
        parse_run_config(composed_values("env=kuhn_poker", "league=psro", "+env.kwargs.max_episode_steps=2"))


EXPERIMENTS = sorted(p.stem for p in (Path(config_dir()) / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes_a_league_whose_shares_fit(name):
    # Composition only (no env built, so no Box2D or mpe2 needed): a file's fixed members plus
    # its self-play share must fit in 1; multiwalker's {} merged into {random: 0.2} with 1.0.
    league = composed_values(f"+experiment={name}")["league"]
    shares = {pid: share for pid, share in (league["fixed_opponents"] or {}).items() if share > 0}
    assert sum(shares.values()) + league["self_play_prob"] <= 1.0, (name, shares, league["self_play_prob"])


def test_multiwalker_has_no_fixed_member():
    league = composed_values("+experiment=multiwalker_ppo")["league"]
    assert league["self_play_prob"] == 1.0 and not any(league["fixed_opponents"].values())
