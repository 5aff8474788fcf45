"""Bad inputs not covered elsewhere, each refused with an error naming what was wrong.

docs/BAD_INPUT.md lists every bad input tried across the suite and the test covering it;
this file holds the rows no other test covered.
"""

from __future__ import annotations

import numpy as np
import pytest

from league.algos import make_algorithm
from league.learn.algorithm import PolicyState
from league.algos.dqn import DISCOUNTS, DQN, N_STEP_RETURNS, NEXT_ACTION_MASK
from league.batch import Columns as C
from league.batch import SampleBatch
from league.config import parse_run_config
from league.envs import make_env
from league.envs.base import AgentSpec
from league.policy import Policy, PolicyFactory, masked_uniform_actions
from league.sampling import FixedMatchups, Sampler

AGENTS = ("player_1", "player_2")


# Config ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "values, message",
    [
        ({"sampler": {"num_samplers": 0}}, r"sampler.num_samplers must be >= 1"),
        ({"sampler": {"fragment_length": 0}}, r"sampler.fragment_length must be >= 1"),
        ({"league": {"fixed_opponents": {"stockfish": 0.1}}}, r"league.fixed_opponents has unknown player\(s\) \['stockfish'\]"),
        ({"league": {"fixed_opponents": {"random": 0.9}}}, r"league.fixed_opponents \{'random': 0.9\} plus league.self_play_prob 0.2 sum to 1.1 > 1"),
        ({"checkpoint": {"interval": -1}}, r"checkpoint.interval must be >= 0"),
        ({"checkpoint": {"keep_last": 0}}, r"checkpoint.keep_last >= 1"),
        ({"resume": ""}, r"resume must be a checkpoint path"),
        ({"eval": {"opponent": "minimax"}}, r"eval.opponent 'minimax' is not supported"),
        ({"policies": {"random": {"algo": "ppo"}}}, r"policy id 'random' is reserved"),
        ({"policies": {"a@b": {"algo": "ppo"}}}, r"policy id 'a@b' is reserved"),
        ({"policies": {"x": {"algo": "td3"}}}, r"unknown algorithm 'td3' \(policies.x.algo\)"),
        ({"policies": {"x": {"algo": "ppo", "params": {"lrr": 1}}}}, r"unknown key\(s\) \['lrr'\]"),
        ({"policies": {"x": {"algoo": "ppo"}}}, r"\['policies.x.algoo'\] at 'policies.x'"),
        ({"learner": {"device": "tpu"}}, r"learner.device must be 'cpu', 'cuda' or 'cuda:N'"),
        ({"learner": {"num_learners": 0}}, r"learner.num_learners must be an integer >= 1"),
        ({"algo": {"name": "dqn", "params": {"n_step": 0}}}, r"dqn.n_step must be positive"),
        ({"env": {"name": "gymnasium:Pendulum-v1"}, "algo": {"name": "dqn"}}, r"Discrete action"),
        ({"env": {"name": "cartpole"}, "algo": {"name": "sac"}}, r"sac needs a Box action space"),
        ({"env": {"name": 5}}, r"config value env.name=5 has type int"),
    ],
)
def test_bad_config_values_name_their_key(values, message):
    with pytest.raises(ValueError, match=message):
        parse_run_config(values)


@pytest.mark.parametrize(
    "values, key",
    [
        ({"sampler": {"num_envs": "4"}}, "sampler.num_envs"),
        ({"algo": {"name": "ppo", "params": {"lr": "fast"}}}, "lr"),
        ({"stop": {"env_steps": -5}}, "stop.env_steps"),
        ({"stop": {"time_s": "soon"}}, "stop.time_s"),
        ({"stop": {"time_s": -5}}, "stop.time_s must be >= 0"),
        ({"league": {"payoff_decay": 0.8, "payoff_min_games": 5}}, "payoff_min_games 5 is never reached"),
        ({"league": {"recipe": "alphastar", "fixed_opponents": {"random": 0.2}}}, "choose the recipe's config file with league=alphastar"),
        ({"eval": {"episodes": 0}}, "eval.episodes"),
        ({"eval": {"interval": -1}}, "eval.interval"),
        ({"league": {"snapshot_steps": -1}}, "league.snapshot_steps"),
        ({"league": {"snapshot_interval": 2}}, "replaced by league.snapshot_steps"),
        ({"iteration": {"min_env_steps": -1}}, "iteration.min_env_steps"),
        ({"sampler": {"broadcast_every_env_steps": -1}}, "sampler.broadcast_every_env_steps"),
        ({"league": {"max_snapshots": 0}}, "league.max_snapshots"),
        ({"sampler": {"num_cpus": -1}}, "sampler.num_cpus"),
        ({"sampler": {"max_consecutive_env_failures": -1}}, "sampler.max_consecutive_env_failures"),
        ({"sampler": {"matchup_draws": -1}}, "sampler.matchup_draws"),
        ({"seed": "x"}, "seed"),
    ],
)
def test_config_values_of_wrong_type_or_range_name_their_key(values, key):
    with pytest.raises(ValueError, match=key):
        parse_run_config(values)


# Training batches -----------------------------------------------------------------------
def ttt_spec() -> AgentSpec:
    env = make_env("tictactoe")
    try:
        return env.spec(env.possible_agents[0])
    finally:
        env.close()


def ppo_batch(spec: AgentSpec, n: int = 8, **replace: np.ndarray | None) -> SampleBatch:
    cols = {
        C.OBS: np.zeros((n, *spec.obs_shape), np.float32),
        C.ACTIONS: np.zeros(n, np.int64),
        C.ACTION_MASK: np.ones((n, spec.num_actions), np.int8),
        C.ACTION_LOGP: np.full(n, -2.0, np.float32),
        C.VF_PREDS: np.zeros(n, np.float32),
        C.ADVANTAGES: np.ones(n, np.float32),
        C.VALUE_TARGETS: np.ones(n, np.float32),
    }
    cols.update(replace)
    return SampleBatch({k: v for k, v in cols.items() if v is not None})


def fresh_state(algo) -> PolicyState:
    model = algo.make_model()
    return PolicyState(model, algo.make_optimizer(model), np.random.default_rng(0), algo.init_extra_state(model))


@pytest.mark.parametrize("column", [C.ADVANTAGES, C.OBS, C.VALUE_TARGETS])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_training_data_stops_ppo_with_floating_point_error(column, value):
    spec = ttt_spec()
    algo = make_algorithm("ppo", spec, {"model": "mlp"})
    good = ppo_batch(spec)
    bad = np.full_like(good[column], value)
    with pytest.raises(FloatingPointError, match="PPO loss became non-finite"):
        algo.learn(fresh_state(algo), ppo_batch(spec, **{column: bad}))


def test_non_finite_returns_stop_dqn_with_floating_point_error():
    spec = AgentSpec(obs_shape=(2,), num_actions=3, has_action_mask=True)
    algo = DQN(spec)
    n = 8
    batch = SampleBatch({
        C.OBS: np.zeros((n, 2), np.float32), C.ACTIONS: np.zeros(n, np.int64),
        N_STEP_RETURNS: np.full(n, np.nan, np.float32), DISCOUNTS: np.full(n, 0.9, np.float32),
        C.NEXT_OBS: np.zeros((n, 2), np.float32), NEXT_ACTION_MASK: np.ones((n, 3), np.int8),
    })
    with pytest.raises(FloatingPointError, match="DQN loss became non-finite"):
        algo.learn(fresh_state(algo), batch)


def test_ppo_batch_without_a_column_names_it():
    spec = ttt_spec()
    algo = make_algorithm("ppo", spec, {"model": "mlp"})
    with pytest.raises((KeyError, ValueError), match=C.ADVANTAGES):
        algo.learn(fresh_state(algo), ppo_batch(spec, **{C.ADVANTAGES: None}))


@pytest.mark.parametrize("replace", [{C.OBS: np.zeros((8, 5), np.float32)}, {C.ACTIONS: np.full(8, 99)}])
def test_ppo_batch_of_another_env_is_refused(replace):
    """Today torch refuses it (shape mismatch, index out of range) before any update."""
    spec = ttt_spec()
    algo = make_algorithm("ppo", spec, {"model": "mlp"})
    state = fresh_state(algo)
    before = [p.detach().clone() for p in state.model.parameters()]
    with pytest.raises((RuntimeError, ValueError, IndexError)):
        algo.learn(state, ppo_batch(spec, **replace))
    assert all(np.array_equal(a, b.detach()) for a, b in zip(before, state.model.parameters()))


# Policies and matchups inside a sampler ---------------------------------------------------
class _LowestIndexPolicy(Policy):
    """Always action 0, legal or not: a broken policy."""

    def compute_actions(self, obs, action_mask, explore=True):
        return {C.ACTIONS: np.zeros(len(obs), np.int64)}

    def get_weights(self):
        return {}

    def set_weights(self, weights):
        pass


class _LowestIndexFactory(PolicyFactory):
    def make_policy(self, seed=None, learns=True):
        return _LowestIndexPolicy()


def ttt_sampler(**kwargs) -> Sampler:
    args = {"policies": {"main": _LowestIndexFactory()}, "matchups": FixedMatchups({a: "main" for a in AGENTS}),
            "num_envs": 1, "fragment_length": 6}
    return Sampler("tictactoe", **{**args, **kwargs})


def test_illegal_action_from_a_policy_stops_the_sampler_naming_policy_and_action():
    with pytest.raises(RuntimeError, match=r"policy 'main' chose illegal action 0 \(mask \[0, 1"):
        ttt_sampler().sample()


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"matchups": FixedMatchups({a: "ghost" for a in AGENTS})}, ValueError, r"unknown policy id\(s\) \['ghost'\]"),
        ({"matchups": FixedMatchups({"player_1": "main"})}, ValueError, r"no policy for agent\(s\) \['player_2'\]"),
        ({"matchups": None}, ValueError, "needs a MatchupSource"),
        ({"fragment_length": 0}, ValueError, "fragment_length must be >= 1"),
        ({"num_envs": 0}, ValueError, "num_envs must be >= 1"),
        ({"env_kwargs": {"bogus": 1}}, TypeError, r"rejected kwargs \['bogus'\]"),
    ],
)
def test_bad_sampler_arguments_are_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        ttt_sampler(**kwargs)


def test_weights_of_another_model_are_refused_by_the_sampler():
    spec = ttt_spec()
    algo = make_algorithm("ppo", spec, {"model": "mlp"})
    sampler = Sampler("tictactoe", policies={"main": algo}, matchups=FixedMatchups({a: "main" for a in AGENTS}),
                      num_envs=1, fragment_length=2)
    weights = algo.make_policy(seed=1).get_weights()
    first = next(iter(weights))
    with pytest.raises(RuntimeError, match=f"size mismatch for {first}"):
        sampler.set_weights({"main": {**weights, first: np.zeros((1, 1), np.float32)}})
    with pytest.raises(RuntimeError, match="Missing key"):
        sampler.set_weights({"main": {k: v for k, v in weights.items() if k != first}})


def test_a_mask_row_without_legal_actions_is_refused():
    with pytest.raises(ValueError, match="action mask row 1 has no legal action"):
        masked_uniform_actions(np.array([[1, 0], [0, 0]], np.int8), np.random.default_rng(0))


def test_actors_asking_ray_for_more_than_it_has_are_refused_not_left_waiting(monkeypatch):
    # `league-train learner=cpu_actors` on a 2-core machine hung before its first iteration:
    # 2 samplers and 2 learner actors at one CPU each, queued by Ray for ever.
    import sys
    import types
    import warnings

    from league.run.build import check_ray_resources
    from league.runtime.ray_start import RayResourcesError
    from run_helpers import tiny_run_config

    fake_ray = types.SimpleNamespace(cluster_resources=lambda: {"CPU": 2.0})
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    actors = {"sampler": {"remote": True, "num_samplers": 2, "num_cpus": 1.0}, "learner": {"num_learners": 2, "num_cpus_per_learner": 1.0}}
    with pytest.raises(RayResourcesError, match=r"ask for 4 CPUs but the cluster has 2 \(2 sampler\(s\).*2 learner\(s\)"):
        check_ray_resources(tiny_run_config(**actors))
    gpu = {"sampler": {"remote": True, "num_samplers": 1, "num_cpus": 0.5},
           "learner": {"device": "cuda", "num_learners": 1, "num_gpus_per_learner": 1.0}}  # fmt: skip
    with pytest.raises(RayResourcesError, match="ask for 1 GPUs but the cluster has 0"):
        check_ray_resources(tiny_run_config(**gpu))
    check_ray_resources(tiny_run_config(sampler={"remote": True, "num_samplers": 2, "num_cpus": 1.0}))  # fits: no error
    with warnings.catch_warnings(record=True) as caught:  # a joined cluster may still grow: a warning
        warnings.simplefilter("always")
        check_ray_resources(tiny_run_config(**actors, ray={"address": "auto"}))
    assert any("autoscaler" in str(w.message) for w in caught)
