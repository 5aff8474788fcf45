"""Exact evaluation for every policy kind: the ``Policy.action_probabilities`` contract,
exploitability of DQN policies, env kwargs reaching the exact evaluator, and a DQN PSRO
league on Kuhn poker that logs exploitability end to end."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import torch  # noqa: E402

from league.algos import make_algorithm  # noqa: E402
from league.algos.models import MLPModel  # noqa: E402
from league.algos.q_policy import EpsilonGreedyQPolicy  # noqa: E402
from league.algos.schedules import ConstantSchedule, LinearSchedule  # noqa: E402
from league.algos.torch_policy import ActorCriticPolicy  # noqa: E402
from league.config import parse_run_config  # noqa: E402
from league.envs import make_env  # noqa: E402
from league.envs.base import AgentSpec  # noqa: E402
from league.envs.openspiel_env import OpenSpielEnv  # noqa: E402
from league.leagues import ExactMetaGame, make_league  # noqa: E402
from league.leagues.builder import exact_meta_game, exploitability_measure  # noqa: E402
from league.policy import Policy, RandomPolicy  # noqa: E402
from league.games.tictactoe.minimax import TicTacToeMinimaxPolicy  # noqa: E402
from league.population.exploitability import exploitability, tabular_policy  # noqa: E402
from league.trainer import Trainer  # noqa: E402
from poker_helpers import league_table, openspiel_expected_return, openspiel_exploitability, openspiel_mixture_exploitability  # noqa: E402

UNIFORM_KUHN = 0.458333  # exploitability of uniform random play in Kuhn poker
MASK = np.array([[1, 1, 1, 1], [0, 1, 0, 1], [1, 0, 0, 0], [0, 0, 1, 1], [1, 1, 0, 1]], dtype=np.int8)


def _obs(rows: int, width: int = 6, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, width)).astype(np.float32)


def _check_distribution(probs: np.ndarray, mask: np.ndarray) -> None:
    """The contract: ``[B, A]``, each row sums to 1 over legal actions, 0 on illegal ones."""
    assert probs.shape == mask.shape
    assert probs.dtype in (np.float32, np.float64)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    assert (probs[mask == 0] == 0.0).all()
    assert (probs >= 0.0).all()


def _sampled_frequencies(policy: Policy, obs: np.ndarray, mask: np.ndarray, draws: int) -> np.ndarray:
    """How often ``compute_actions(explore=True)`` picks each action for one (obs, mask) row."""
    actions = policy.compute_actions(np.repeat(obs[None], draws, 0), np.repeat(mask[None], draws, 0))["actions"]
    return np.bincount(actions, minlength=mask.shape[0]) / draws


def _q_model(obs_width: int, num_actions: int, seed: int = 0) -> torch.nn.Module:
    """A small random Q-network ``obs -> q[B, A]``."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(obs_width, 16), torch.nn.Tanh(), torch.nn.Linear(16, num_actions))


# ------------------------------------------------------------------ the Policy contract


def test_random_policy_is_uniform_over_legal_actions() -> None:
    probs = RandomPolicy(seed=0).action_probabilities(_obs(len(MASK)), MASK)
    _check_distribution(probs, MASK)
    np.testing.assert_allclose(probs, MASK / MASK.sum(axis=1, keepdims=True))


def test_actor_critic_probabilities_are_the_masked_softmax_it_samples() -> None:
    torch.manual_seed(0)
    model = MLPModel((6,), 4)
    torch.nn.init.normal_(model.pi.weight, std=1.0)
    policy = ActorCriticPolicy(model, learns=False, seed=0)
    obs = _obs(len(MASK))
    probs = policy.action_probabilities(obs, MASK)
    _check_distribution(probs, MASK)
    logits = model(torch.from_numpy(obs))[0].detach().double().numpy()
    expected = np.where(MASK == 1, np.exp(logits - logits.max(axis=1, keepdims=True)), 0.0)
    np.testing.assert_allclose(probs, expected / expected.sum(axis=1, keepdims=True), rtol=1e-6)
    # compute_actions(explore=True) samples exactly this distribution.
    frequencies = _sampled_frequencies(policy, obs[0], MASK[0], 20_000)
    np.testing.assert_allclose(frequencies, probs[0], atol=0.02)


@pytest.mark.parametrize("learns", [False, True])
def test_epsilon_greedy_probabilities(learns: bool) -> None:
    schedule = LinearSchedule(1.0, 0.2, 100)
    policy = EpsilonGreedyQPolicy(_q_model(6, 4), schedule, learns=learns, seed=0)
    if learns:
        policy.steps = 50  # half-way down the schedule: epsilon 0.6
    eps = 0.6 if learns else 0.2  # a frozen policy acts with the final epsilon
    assert policy.epsilon == pytest.approx(eps)
    obs = _obs(len(MASK))
    probs = policy.action_probabilities(obs, MASK)
    _check_distribution(probs, MASK)
    greedy = policy.compute_actions(obs, MASK, explore=False)["actions"]
    n_legal = MASK.sum(axis=1)
    rows = np.arange(len(MASK))
    np.testing.assert_allclose(probs[rows, greedy], (1 - eps) + eps / n_legal)
    others = (MASK == 1) & (np.arange(4)[None] != greedy[:, None])
    np.testing.assert_allclose(probs[others], np.broadcast_to(eps / n_legal[:, None], MASK.shape)[others])
    assert policy.steps == (50 if learns else 0), "reading probabilities must not advance the schedule"
    if not learns:
        frequencies = _sampled_frequencies(policy, obs[0], MASK[0], 20_000)
        np.testing.assert_allclose(frequencies, probs[0], atol=0.02)


def test_greedy_action_ignores_a_larger_illegal_q_value() -> None:
    model = torch.nn.Linear(2, 3)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.copy_(torch.tensor([5.0, 1.0, 2.0]))  # action 0 best, but masked below
    policy = EpsilonGreedyQPolicy(model, ConstantSchedule(0.0), learns=False)
    probs = policy.action_probabilities(np.zeros((1, 2), np.float32), np.array([[0, 1, 1]], np.int8))
    np.testing.assert_array_equal(probs, [[0.0, 0.0, 1.0]])


def _ttt_obs(mine: list[int], theirs: list[int]) -> np.ndarray:
    obs = np.zeros((3, 3, 2), np.float32)
    for plane, cells in ((0, mine), (1, theirs)):
        for cell in cells:
            obs[cell // 3, cell % 3, plane] = 1.0
    return obs


def test_scripted_probabilities_are_one_hot_or_uniform_over_ties() -> None:
    policy = TicTacToeMinimaxPolicy(seed=0)
    # Row 0: cell 2 wins at once (the only best move). Row 1: the empty board, every move draws.
    obs = np.stack([_ttt_obs([0, 1], [3, 4]), _ttt_obs([], [])])
    mask = np.ones((2, 9), np.int8)
    mask[0, [0, 1, 3, 4]] = 0
    probs = policy.action_probabilities(obs, mask)
    _check_distribution(probs, mask)
    np.testing.assert_array_equal(probs[0], np.eye(9)[2])
    np.testing.assert_allclose(probs[1], np.full(9, 1 / 9))
    # Exploring play breaks ties at random, so it only ever picks moves of positive probability.
    actions = policy.compute_actions(np.repeat(obs[1:], 200, 0), np.repeat(mask[1:], 200, 0))["actions"]
    assert len(set(actions.tolist())) > 1


def test_a_sampling_only_policy_names_itself() -> None:
    class SamplesOnly(Policy):
        def compute_actions(self, obs, action_mask, explore=True):  # noqa: ANN001, ANN201
            return {"actions": np.zeros(len(obs), np.int64)}

    policy = SamplesOnly()  # still instantiable: the method is not abstract
    with pytest.raises(NotImplementedError, match="SamplesOnly does not implement action_probabilities"):
        policy.action_probabilities(_obs(1), MASK[:1])


# ---------------------------------------------------------------- DQN exploitability


def _kuhn_dqn(epsilon_final: float, spec: AgentSpec | None = None):  # noqa: ANN202
    spec = spec or AgentSpec((11,), 2, True)
    return make_algorithm("dqn", spec, {"model": "mlp", "epsilon_start": 1.0, "epsilon_final": epsilon_final})


def test_untrained_dqn_with_epsilon_one_is_uniform_random() -> None:
    dqn = _kuhn_dqn(1.0)
    policy = dqn.make_policy(seed=0, learns=False)
    assert exploitability("kuhn_poker", policy) == pytest.approx(UNIFORM_KUHN, abs=1e-6)
    # The league's evaluator, as a learning player's exploitability is logged (this crashed).
    exact = ExactMetaGame("kuhn_poker")
    assert exact.exploitability(dqn, policy.get_weights()) == pytest.approx(UNIFORM_KUHN, abs=1e-6)


@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_dqn_exploitability_matches_a_direct_openspiel_policy(eps: float) -> None:
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability as os_exploitability

    torch.manual_seed(3)
    policy = _kuhn_dqn(eps).make_policy(seed=0, learns=False)
    game = pyspiel.load_game("kuhn_poker")

    def probs(state: pyspiel.State) -> dict[int, float]:
        # Epsilon-greedy by hand, one state at a time: eps/n on each legal action, the rest greedy.
        legal = state.legal_actions()
        with torch.no_grad():
            q = policy.model(torch.tensor([state.information_state_tensor()], dtype=torch.float32))[0]
        best = max(legal, key=lambda a: (float(q[a]), -a))
        return {a: eps / len(legal) + (1.0 - eps if a == best else 0.0) for a in legal}

    direct = os_exploitability.exploitability(game, os_policy.tabular_policy_from_callable(game, probs))
    assert exploitability("kuhn_poker", policy) == pytest.approx(direct, abs=1e-6)
    assert direct > 0.05  # a random net's greedy play is far from equilibrium


# ------------------------------------------------------- env kwargs reach the evaluator


def _kuhn_cfg(env_kwargs: dict | None = None, **overrides):  # noqa: ANN003, ANN202
    """A tiny in-process DQN PSRO run on Kuhn poker; ``section={...}`` merges into that section."""
    values = {
        "env": {"name": "kuhn_poker", "kwargs": env_kwargs or {}},
        "algo": {"name": "dqn", "params": {}},
        "league": {"recipe": "psro", "snapshot_steps": 30, "exploitability_interval": 1, "fixed_opponents": {}},
        "sampler": {"remote": False, "num_samplers": 1, "num_envs": 4, "fragment_length": 16, "num_cpus": 0,
                    "mode": "bulk_sync"},
        "eval": {"interval": 0, "episodes": 4},
        "stop": {"iterations": 4, "time_s": 0, "env_steps": 0},
        "logging": {"tensorboard": False},
        "verbose": False,
    }
    for key, value in overrides.items():
        values[key] = {**values[key], **value}
    return parse_run_config(values)


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_observation_kwarg_reaches_the_league_evaluator(algo: str) -> None:
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability as os_exploitability

    # ``observation="observation"``: Kuhn's 7-wide observation tensor instead of the
    # 11-wide information state. The evaluator used to show policies the latter.
    cfg = _kuhn_cfg(env_kwargs={"observation": "observation"})
    env = make_env(cfg.env.name, **cfg.env.kwargs)
    spec, agents = env.spec(env.possible_agents[0]), list(env.possible_agents)
    assert spec.obs_shape == (7,)
    torch.manual_seed(5)
    algorithm = make_algorithm(algo, spec, {"model": "mlp", "epsilon_final": 0.3} if algo == "dqn" else {})
    policy = algorithm.make_policy(seed=0, learns=False)
    league = make_league(cfg, {"main": algorithm}, spec, agents, remote=False)
    try:
        value = league.exact.exploitability(algorithm, policy.get_weights())
    finally:
        league.close()

    game = pyspiel.load_game("kuhn_poker")

    def probs(state: pyspiel.State) -> dict[int, float]:
        # The policy's distribution at the observation tensor, one state at a time.
        obs = np.asarray([state.observation_tensor()], dtype=np.float32)
        mask = np.asarray([state.legal_actions_mask()], dtype=np.int8)
        row = policy.action_probabilities(obs, mask)[0]
        return {a: float(row[a]) for a in state.legal_actions()}

    direct = os_exploitability.exploitability(game, os_policy.tabular_policy_from_callable(game, probs))
    assert value == pytest.approx(direct, abs=1e-6)


def test_evaluator_shows_policies_what_the_env_shows_them() -> None:
    seen: list[np.ndarray] = []

    class Recording(RandomPolicy):
        def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
            seen.append(obs)
            return super().action_probabilities(obs, action_mask)

    env = OpenSpielEnv("kuhn_poker", observation="observation")
    tabular_policy(env.game, Recording(), ExactMetaGame.from_env(env).observation)
    # Every observation the env hands out in play is one the evaluator asked about.
    asked = {tuple(row) for batch in seen for row in batch}
    assert all(len(row) == 7 for row in asked)
    for seed in range(20):
        ts = env.reset(seed=seed)
        while not ts.done:
            (agent,) = ts.obs
            assert tuple(ts.obs[agent]) in asked
            ts = env.step({agent: int(np.flatnonzero(ts.masks[agent])[0])})


def test_game_parameters_reach_the_evaluator() -> None:
    env = make_env("kuhn_poker", players=3)
    spec = env.spec(env.possible_agents[0])
    assert spec.obs_shape != (11,)  # the three-player information state is wider
    exact = ExactMetaGame.from_env(env)
    assert exact.game.num_players() == 3
    dqn = _kuhn_dqn(1.0, spec)
    uniform = exploitability(pyspiel.load_game("kuhn_poker", {"players": 3}), RandomPolicy())
    value = exact.exploitability(dqn, dqn.make_policy(seed=0, learns=False).get_weights())
    assert value == pytest.approx(uniform, abs=1e-9)


def test_exact_meta_game_takes_the_env_kwargs_and_the_meta_strategy() -> None:
    # What a coordinated league's build passes (env.kwargs, league.meta_strategy): three-player
    # Kuhn is scored exactly, but the least-exploitable mixture needs a two-player zero-sum game.
    assert exact_meta_game("kuhn_poker", {"players": 3}).game.num_players() == 3
    with pytest.raises(ValueError, match="needs a two-player zero-sum game"):
        exact_meta_game("kuhn_poker", {"players": 3}, "least_exploitable")
    assert isinstance(exploitability_measure("kuhn_poker", {}), ExactMetaGame)


def test_a_truncating_env_is_refused() -> None:
    with pytest.raises(ValueError, match="truncates episodes after 2 steps"):
        ExactMetaGame.from_env(OpenSpielEnv("kuhn_poker", max_episode_steps=2))
    assert ExactMetaGame.from_env(OpenSpielEnv("kuhn_poker", max_episode_steps=3)).game.num_players() == 2


# ------------------------------------------------------------------------ end to end


@pytest.mark.parametrize("env_kwargs", [{}, {"observation": "observation"}], ids=["info_state", "observation"])
def test_dqn_psro_league_on_kuhn_logs_exploitability(tmp_path, env_kwargs: dict) -> None:  # noqa: ANN001
    # A snapshot every 30 agent steps (an iteration samples up to 64 env steps): exact
    # payoffs of DQN snapshots fill the meta-game, and main and the meta-Nash mixture are scored.
    dqn = {"model": "mlp", "learning_starts": 32, "train_batch_size": 16, "training_intensity": 1.0,
           "target_update_interval": 4, "epsilon_steps": 100, "replay_seed": 0}
    cfg = _kuhn_cfg(env_kwargs=env_kwargs, algo={"params": dqn})
    trainer = Trainer(cfg, tmp_path)
    try:
        trainer.train()
        rows = [r for r in trainer.history if "exploitability" in r]
        assert len(rows) == 4
        snapshots = list(trainer.league.frozen_weights())
        assert len(snapshots) >= 2, "too few snapshots: the exact meta-game was never filled"
        assert any(r.get("main/loss") is not None for r in trainer.history), "DQN never trained"
        # The logged figures, recomputed by OpenSpiel's own tree walks on the policies shown
        # the training env's observations: main's exploitability, every frozen pair's payoff
        # entry, and the exploitability of the meta-Nash mixture of the frozen players.
        last = rows[-1]["exploitability"]
        game, observe = pyspiel.load_game("kuhn_poker"), make_env("kuhn_poker", **env_kwargs).observe
        main = league_table(game, trainer.algorithms["main"], trainer.learner.get_weights(["main"])["main"], observe)
        assert last["main"] == pytest.approx(openspiel_exploitability(game, main), abs=1e-9)
        tables = {pid: league_table(game, factory, weights, observe) for pid, (factory, weights) in trainer.league.frozen_policies().items()}
        payoff = trainer.league.payoff
        for a in tables:
            for b in tables:
                if a != b:
                    assert payoff.expected_return(a, b) == pytest.approx(openspiel_expected_return(game, tables[a], tables[b]), abs=1e-9)
        mixture = trainer.league.summary()["meta_strategy"]
        expected = openspiel_mixture_exploitability(game, [tables[p] for p in mixture], list(mixture.values()))
        assert last["meta_strategy"] == pytest.approx(expected, abs=1e-9)
    finally:
        trainer.close()


def test_an_empirical_meta_game_on_kuhn_still_logs_exact_exploitability(tmp_path):
    """meta_game empirical: payoffs come from games, but exploitability is still exact (it was silently off)."""
    from league.trainer import Trainer

    cfg = _kuhn_cfg(algo={"name": "ppo", "params": {"train_batch_size": 64, "minibatch_size": 32, "num_epochs": 1}},
                    league={"meta_game": "empirical"}, eval={"interval": 1})  # fmt: skip
    trainer = Trainer(cfg, tmp_path)
    try:
        trainer.train()
        assert trainer.league.exact is not None and not trainer.league.exact_payoffs
        assert any(any(k.startswith("exploitability") for k in row) for row in trainer.history)
    finally:
        trainer.close()


def test_a_sampler_policy_answers_action_probabilities_like_the_policy_it_wraps():
    from league.algos import make_algorithm
    from league.envs import make_env
    from league.sampling.versioning import VersionedPolicy

    spec = make_env("tictactoe").spec("player_1")
    inner = make_algorithm("ppo", spec, {"model": "mlp"}).make_policy(seed=0, learns=False)
    wrapped = VersionedPolicy(inner)
    obs = np.zeros((3, *spec.obs_shape), dtype=np.float32)
    mask = np.ones((3, spec.num_actions), dtype=np.int8)
    mask[0, :4] = 0
    np.testing.assert_allclose(wrapped.action_probabilities(obs, mask), inner.action_probabilities(obs, mask))
