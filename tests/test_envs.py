"""The env adapters against the TimeStep contract of league/envs/base.py (no Ray)."""

from __future__ import annotations

import importlib
import warnings
from collections import defaultdict

import gymnasium
import gymnasium.spaces as spaces
import numpy as np
import pytest
from pettingzoo import AECEnv

from league.envs import (
    GYM_AGENT,
    GymnasiumEnv,
    MultiAgentEnv,
    PettingZooAECEnv,
    PettingZooParallelEnv,
    TimeStep,
    build_preprocessor,
    make_env,
    register_env,
    registered_env_names,
)
from league.envs import registry

MODULES = {
    "connect_four": "pettingzoo.classic.connect_four.connect_four",
    "tictactoe": "pettingzoo.classic.tictactoe.tictactoe",
    "rps": "pettingzoo.classic.rps.rps",
    "leduc_holdem": "pettingzoo.classic.rlcard_envs.leduc_holdem",
    "texas_holdem": "pettingzoo.classic.rlcard_envs.texas_holdem",
}
C4_DRAW = [0, 2, 4, 6, 1, 3, 5] * 6  # fills the board with no four in a row


def raw_returns(raw_env: AECEnv, moves: list[int], seed: int | None = None) -> dict[str, float]:
    """Oracle: replay ``moves`` through the raw AEC API, summing what ``last()`` reports."""
    raw_env.reset(seed=seed)
    totals: dict[str, float] = defaultdict(float)
    pending = iter(moves)
    for agent in raw_env.agent_iter():
        _obs, reward, terminated, truncated, _info = raw_env.last()
        totals[agent] += reward
        raw_env.step(None if terminated or truncated else next(pending))
    return dict(totals)


def play(env: MultiAgentEnv, moves: list[int], seed: int | None = 0) -> list[TimeStep]:
    """Scripted AEC moves; checks the one-agent-acts rule at every step."""
    steps = [env.reset(seed=seed)]
    for move in moves:
        (agent,) = steps[-1].obs
        assert set(steps[-1].masks) == {agent} and steps[-1].masks[agent][move] == 1
        steps.append(env.step({agent: move}))
    return steps


def summed_rewards(steps: list[TimeStep]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for ts in steps:
        for agent, reward in ts.rewards.items():
            totals[agent] += reward
    return dict(totals)


SCRIPTED = [
    # (env, moves, final rewards): the last move ends the game in each case.
    ("tictactoe", [0, 3, 1, 4, 2], {"player_1": 1.0, "player_2": -1.0}),  # first mover wins
    ("tictactoe", [0, 3, 1, 4, 8, 5], {"player_1": -1.0, "player_2": 1.0}),  # second mover wins
    ("tictactoe", [0, 1, 2, 4, 3, 5, 7, 6, 8], {"player_1": 0.0, "player_2": 0.0}),  # draw
    ("connect_four", [0, 1, 0, 1, 0, 1, 0], {"player_0": 1.0, "player_1": -1.0}),
    ("connect_four", [0, 1, 0, 1, 0, 1, 2, 1], {"player_0": -1.0, "player_1": 1.0}),
    ("connect_four", C4_DRAW, {"player_0": 0.0, "player_1": 0.0}),
]


@pytest.mark.parametrize("name,moves,final", SCRIPTED)
def test_aec_scripted_game_credits_the_final_reward_to_both_players(name, moves, final):
    env = make_env(name)
    steps = play(env, moves)
    for ts in steps[1:-1]:  # nothing happens before the deciding move
        assert not ts.done and not ts.terminated and not ts.truncated
        assert all(r == 0.0 for r in ts.rewards.values())
    last = steps[-1]
    assert last.done and last.obs == {} and last.masks == {}
    assert last.rewards == final  # includes the player who did not move
    assert last.terminated == {agent: True for agent in env.possible_agents} and not last.truncated
    assert summed_rewards(steps) == raw_returns(importlib.import_module(MODULES[name]).env(), moves)
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step({next(iter(final)): 0})


def test_agents_alternate_and_obs_follow_the_preprocessing_rule():
    env = make_env("connect_four")
    assert env.spec("player_1").obs_shape == (6, 7, 2) and env.spec("player_1").num_actions == 7
    assert make_env("tictactoe").spec("player_2").obs_shape == (3, 3, 2)
    steps = play(env, [3, 3])
    assert [next(iter(ts.obs)) for ts in steps] == ["player_0", "player_1", "player_0"]
    obs = steps[2].obs["player_0"]
    assert obs.dtype == np.float32 and obs.shape == (6, 7, 2)
    # channel 0: the mover's pieces, channel 1: the opponent's (bottom row is row 5)
    assert obs[5, 3, 0] == 1 and obs[4, 3, 1] == 1 and obs.sum() == 2
    with pytest.raises(ValueError, match="player_0"):
        env.step({"player_1": 0})
    with pytest.raises(ValueError, match="unknown agent"):
        env.spec("nobody")


def test_masks_are_int8_and_exclude_full_columns():
    env = make_env("connect_four")
    steps = play(env, [3, 3, 3, 3, 3, 3])
    mask = steps[-1].masks["player_0"]
    assert mask.dtype == np.int8 and mask.shape == (7,)
    assert mask.tolist() == [1, 1, 1, 0, 1, 1, 1]


def test_max_episode_steps_truncates_every_live_agent_with_final_obs():
    env = make_env("connect_four", max_episode_steps=3)
    steps = play(env, [0, 1, 2])
    last = steps[-1]
    assert last.done and last.truncated == {"player_0": True, "player_1": True} and not last.terminated
    assert {a: o.shape for a, o in last.final_obs.items()} == {"player_0": (6, 7, 2), "player_1": (6, 7, 2)}
    assert last.final_obs["player_1"].sum() == 3  # the board after the third move
    assert env.reset().obs.keys() == {"player_0"}  # the limit restarts with the episode


def test_rps_parallel_both_act_every_step_until_max_cycles():
    env = make_env("rps", max_cycles=3)
    assert type(env).__name__ == "PettingZooParallelEnv"
    ts = env.reset(seed=0)
    assert set(ts.obs) == set(ts.masks) == {"player_0", "player_1"}
    assert ts.obs["player_0"].tolist() == [0, 0, 0, 1]  # Discrete(4) one-hot: "no move yet"
    # rock(0) vs paper(1): paper wins; then a tie; then scissors(2) beats paper(1)
    ts = env.step({"player_0": 0, "player_1": 1})
    assert ts.rewards == {"player_0": -1.0, "player_1": 1.0} and not ts.done
    assert ts.obs["player_0"].tolist() == [0, 1, 0, 0]  # sees the opponent's last move
    assert env.step({"player_0": 1, "player_1": 1}).rewards == {"player_0": 0.0, "player_1": 0.0}
    with pytest.raises(ValueError, match="one action for each"):
        env.step({"player_0": 1})
    ts = env.step({"player_0": 2, "player_1": 1})
    assert ts.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert ts.done and ts.obs == {} and ts.truncated == {"player_0": True, "player_1": True}
    assert ts.final_obs["player_1"].tolist() == [0, 0, 1, 0]


def test_parallel_max_episode_steps_and_silently_dropped_agents_still_end():
    env = make_env("rps", max_episode_steps=2)
    env.reset(seed=0)
    env.step({"player_0": 0, "player_1": 0})
    ts = env.step({"player_0": 0, "player_1": 2})
    assert ts.done and ts.truncated == {"player_0": True, "player_1": True}
    assert ts.final_obs["player_0"].tolist() == [0, 0, 1, 0]

    class Vanishing:
        """A parallel env that drops "b" from its agents without flagging it."""

        possible_agents = ["a", "b"]
        metadata = {"name": "vanishing"}

        def observation_space(self, agent):
            return spaces.Discrete(2)

        def action_space(self, agent):
            return spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            self.agents, self.t = ["a", "b"], 0
            return dict.fromkeys(self.agents, 0), {}

        def step(self, actions):
            self.t += 1
            self.agents = ["a"] if self.t == 1 else []
            return dict.fromkeys(self.agents, 1), dict.fromkeys(actions, 0.5), {"a": self.t == 2}, {}, {}

    dropping = PettingZooParallelEnv(Vanishing())
    moves, totals = check_episode(dropping, np.random.default_rng(0), seed=0)
    assert len(moves) == 3 and totals == {"a": 1.0, "b": 0.5}


def test_rps_aec_reports_the_cycle_reward_to_both_at_the_second_move():
    env = make_env("rps", api="aec", max_cycles=2)
    steps = play(env, [0, 1, 2, 2])
    assert steps[1].rewards == {"player_0": 0.0, "player_1": 0.0}
    assert steps[2].rewards == {"player_0": -1.0, "player_1": 1.0}
    assert steps[4].done and steps[4].truncated == {"player_0": True, "player_1": True}
    assert set(steps[4].final_obs) == {"player_0", "player_1"}
    assert summed_rewards(steps) == raw_returns(importlib.import_module(MODULES["rps"]).env(max_cycles=2), [0, 1, 2, 2])


@pytest.mark.parametrize("name", ["cartpole", "gymnasium:CartPole-v1"])
def test_gymnasium_is_one_agent_and_truncation_gives_final_obs(name):
    env = make_env(name, max_episode_steps=4)
    assert env.possible_agents == [GYM_AGENT] and env.spec(GYM_AGENT).obs_shape == (4,)
    ts = env.reset(seed=1)
    assert ts.masks[GYM_AGENT].tolist() == [1, 1]
    for t in range(4):
        ts = env.step({GYM_AGENT: t % 2})
        assert ts.rewards == {GYM_AGENT: 1.0}
    assert ts.done and ts.truncated == {GYM_AGENT: True} and ts.obs == {}
    assert ts.final_obs[GYM_AGENT].dtype == np.float32 and ts.final_obs[GYM_AGENT].shape == (4,)


def test_gymnasium_own_time_limit_and_termination():
    limited = GymnasiumEnv(gymnasium.make("CartPole-v1", max_episode_steps=3))
    limited.reset(seed=0)
    steps = [limited.step({GYM_AGENT: t % 2}) for t in range(3)]
    assert [ts.done for ts in steps] == [False, False, True]
    assert steps[-1].truncated == {GYM_AGENT: True} and steps[-1].final_obs[GYM_AGENT].shape == (4,)
    env = make_env("cartpole")
    ts, count = env.reset(seed=0), 0
    while not ts.done:  # always pushing left topples the pole: termination, no final_obs
        ts = env.step({GYM_AGENT: 0})
        count += 1
    assert ts.terminated == {GYM_AGENT: True} and not ts.truncated and not ts.final_obs and count < 100


def test_reset_with_seed_is_deterministic():
    env = make_env("leduc_holdem")  # dealt cards depend on the seed

    def episode(seed: int) -> list[tuple]:
        ts, trace = env.reset(seed=seed), []
        while not ts.done:
            (agent,) = ts.obs
            trace.append((agent, ts.obs[agent].tobytes(), ts.masks[agent].tobytes()))
            ts = env.step({agent: int(np.flatnonzero(ts.masks[agent])[0])})
            trace.append(tuple(sorted(ts.rewards.items())))
        return trace

    first = episode(7)
    assert len({tuple(episode(seed)[0]) for seed in range(8)}) > 1  # seeds matter...
    assert episode(7) == first  # ...and reseeding replays exactly


class LastOneStanding(AECEnv):
    """Three agents with different spaces take turns; action 1 quits (-1 to the
    quitter, +1 to each other live agent); the last agent left gets +2. Agent "b"
    gets its mask through ``info``: it may not quit on its first turn."""

    metadata = {"name": "last_one_standing", "is_parallelizable": False}

    def __init__(self):
        super().__init__()
        self.possible_agents = ["a", "b", "c"]
        self.observation_spaces = {
            "a": spaces.Discrete(5),
            "b": spaces.Box(0.0, 9.0, (2,), np.float32),
            "c": spaces.Dict({"y": spaces.Box(0.0, 9.0, (3,)), "x": spaces.Discrete(2)}),
        }
        self.action_spaces = {agent: spaces.Discrete(2) for agent in self.possible_agents}

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.rewards, self._cumulative_rewards = dict.fromkeys(self.agents, 0.0), dict.fromkeys(self.agents, 0.0)
        self.terminations, self.truncations = dict.fromkeys(self.agents, False), dict.fromkeys(self.agents, False)
        self.infos = {"a": {}, "b": {"action_mask": np.array([1, 0], np.int8)}, "c": {}}
        self.agent_selection, self.turns = "a", 0

    def observe(self, agent):
        t = self.turns
        return {"a": t % 5, "b": np.array([t % 9, 1], np.float32), "c": {"x": t % 2, "y": np.full(3, t % 9)}}[agent]

    def step(self, action):
        me = self.agent_selection
        if self.terminations[me] or self.truncations[me]:
            return self._was_dead_step(action)
        self._cumulative_rewards[me] = 0.0
        self._clear_rewards()
        live = [agent for agent in self.agents if not self.terminations[agent]]
        if action == 1:
            self.rewards[me] -= 1.0
            live.remove(me)
            self.terminations[me] = True
            for other in live:
                self.rewards[other] += 1.0
            if len(live) == 1:
                self.rewards[live[0]] += 2.0
                self.terminations[live[0]] = True
        if me == "b":
            self.infos["b"] = {"action_mask": np.array([1, 1], np.int8)}
        self.turns += 1
        order = self.possible_agents
        following = order[order.index(me) + 1:] + order[: order.index(me) + 1]
        self.agent_selection = next((agent for agent in following if agent in live), me)
        self._accumulate_rewards()
        self._deads_step_first()


def test_dead_agents_are_stepped_internally_and_spaces_differ_per_agent():
    env = PettingZooAECEnv(LastOneStanding())
    assert [env.spec(a).obs_shape for a in "abc"] == [(5,), (2,), (5,)]
    moves = [0, 0, 1, 1]  # a passes, b passes, c quits, a quits: b is the last one
    steps = play(env, moves)
    assert steps[2].obs["c"].tolist() == [1, 0, 2, 2, 2]  # sorted keys: one-hot x=0, then y at turn 2
    assert steps[1].masks["b"].tolist() == [1, 0] and not env.spec("b").has_action_mask
    assert steps[3].rewards == {"a": 1.0, "b": 1.0, "c": -1.0} and steps[3].terminated == {"c": True}
    assert list(steps[3].obs) == ["a"]  # the dead "c" was stepped with None internally
    assert steps[4].rewards == {"a": -1.0, "b": 3.0} and steps[4].done
    assert steps[4].terminated == {"a": True, "b": True}
    assert summed_rewards(steps) == raw_returns(LastOneStanding(), moves) == {"a": 0.0, "b": 4.0, "c": -1.0}


class Forgetful(LastOneStanding):
    """Breaks the AEC rules: a quitting "c" vanishes instead of being flagged."""

    def step(self, action):
        super().step(action)
        if self.terminations.get("c"):
            for table in (self.terminations, self.truncations, self.rewards, self._cumulative_rewards, self.infos):
                del table["c"]
            self.agents.remove("c")
            if self.agent_selection == "c":
                self.agent_selection, self._skip_agent_selection = self._skip_agent_selection, None


def test_an_agent_that_vanishes_unflagged_still_sees_the_episode_end():
    steps = play(PettingZooAECEnv(Forgetful()), [0, 0, 1, 1])
    assert all("c" not in ts.terminated for ts in steps[:-1])
    assert steps[-1].done and steps[-1].terminated == {"a": True, "b": True, "c": True}


def check_episode(env: MultiAgentEnv, rng: np.random.Generator, seed: int) -> tuple[list[int], dict[str, float]]:
    """One random episode under the contract's invariants; returns moves and reward sums."""
    ts = env.reset(seed=seed)
    assert not ts.rewards and not ts.done
    moves, totals, ended = [], defaultdict(float), []
    while not ts.done:
        assert ts.obs and set(ts.obs) == set(ts.masks) and not set(ts.obs) & set(ended)
        actions = {}
        for agent, mask in ts.masks.items():
            assert mask.dtype == np.int8 and mask.shape == (env.spec(agent).num_actions,) and mask.any()
            assert ts.obs[agent].shape == env.spec(agent).obs_shape and ts.obs[agent].dtype == np.float32
            actions[agent] = int(rng.choice(np.flatnonzero(mask)))
        moves.extend(actions.values())
        ts = env.step(actions)
        for agent, reward in ts.rewards.items():
            totals[agent] += reward
        ended += list(ts.terminated) + list(ts.truncated)
        assert set(ts.final_obs) == set(ts.truncated)
    assert ts.obs == {} and sorted(ended) == sorted(env.possible_agents)  # each ends exactly once
    return moves, dict(totals)


@pytest.mark.parametrize("name", ["connect_four", "tictactoe", "leduc_holdem", "texas_holdem", "rps-aec", "last_one"])
def test_random_episodes_keep_the_contract_and_lose_no_reward(name):
    rng = np.random.default_rng(1)
    if name == "last_one":
        env, oracle = PettingZooAECEnv(LastOneStanding()), LastOneStanding()
    elif name == "rps-aec":
        env, oracle = make_env("rps", api="aec"), importlib.import_module(MODULES["rps"]).env()
    else:
        env, oracle = make_env(name), importlib.import_module(MODULES[name]).env()
    for seed in range(15):
        moves, totals = check_episode(env, rng, seed)
        assert totals == pytest.approx(raw_returns(oracle, moves, seed))


def test_random_parallel_and_gym_episodes_keep_the_contract():
    rng = np.random.default_rng(2)
    for env in (make_env("rps", max_cycles=5), make_env("cartpole", max_episode_steps=30)):
        for seed in range(5):
            check_episode(env, rng, seed)


def test_env_exceptions_propagate_with_the_env_name():
    env = make_env("tictactoe")
    env.reset(seed=0)

    def broken_step(action):
        raise KeyError("board")

    env.env.step = broken_step
    with pytest.raises(RuntimeError, match="env tictactoe raised in step") as info:
        env.step({"player_1": 0})
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(RuntimeError, match="before reset"):  # the broken episode is over
        env.step({"player_1": 0})
    gym = make_env("cartpole")
    gym.reset()
    gym.env.step = broken_step
    with pytest.raises(RuntimeError, match="env cartpole raised in step"):
        gym.step({GYM_AGENT: 0})


def test_registry_resolution_and_errors(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # registrations stay local
    assert {"connect_four", "tictactoe", "rps", "leduc_holdem", "texas_holdem", "cartpole"} <= set(registered_env_names())
    with pytest.raises(ValueError, match="'connect5'.*connect_four"):
        make_env("connect5")
    with pytest.raises(ValueError, match="pettingzoo.classic.nope_v1"):
        make_env("pettingzoo.classic.nope_v1")
    with pytest.raises(ValueError, match="NoSuchEnv"):
        make_env("gymnasium:NoSuchEnv-v0")
    with pytest.raises(ValueError, match="api"):
        make_env("connect_four", api="async")
    with pytest.raises(ValueError, match="parallel_env"):
        make_env("connect_four", api="parallel")
    with pytest.raises(ValueError, match="neither"):
        make_env("json.decoder")
    with pytest.raises(TypeError, match="rejected kwargs"):
        make_env("tictactoe", board_size=4)
    assert make_env("gymnasium:Pendulum-v1").spec("agent_0").continuous  # Box actions (tests/test_continuous.py)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PettingZoo >= 1.27 deprecates these shims
        assert type(make_env("pettingzoo.classic.connect_four_v3")) is PettingZooAECEnv
        assert type(make_env("pettingzoo.classic.rps_v2")).__name__ == "PettingZooParallelEnv"
    register_env("tiny", lambda **kw: PettingZooAECEnv(LastOneStanding(), **kw))
    assert make_env("tiny", max_episode_steps=2).max_episode_steps == 2
    with pytest.raises(ValueError, match="already registered"):
        register_env("tiny", "cartpole")


def test_preprocessing_rule_for_other_spaces():
    discrete = build_preprocessor(spaces.Discrete(3, start=1), spaces.Discrete(4, start=2))
    obs, mask = discrete.transform(2, None)
    assert obs.tolist() == [0, 1, 0] and discrete.action_start == 2 and not mask.flags.writeable
    dict_space = spaces.Dict({"pos": spaces.Box(-1, 1, (2,)), "action_mask": spaces.Box(0, 1, (4,), np.int8),
                              "id": spaces.Discrete(3)})
    pre = build_preprocessor(dict_space, spaces.Discrete(4))
    sample = {"pos": np.array([0.5, -0.5], np.float32), "id": 2, "action_mask": np.array([0, 1, 1, 0], np.int8)}
    obs, mask = pre.transform(sample, {"action_mask": [1, 1, 1, 1]})  # the obs mask wins
    # sorted keys, mask split off: "id" one-hot, then "pos"
    assert pre.spec.obs_shape == (5,) and obs.tolist() == [0, 0, 1, 0.5, -0.5] and mask.tolist() == [0, 1, 1, 0]
    box = build_preprocessor(spaces.Box(0, 1, (2, 2), np.float32), spaces.Discrete(2))
    source = np.ones((2, 2), np.float32)
    assert not np.shares_memory(box.transform(source, None)[0], source)  # never aliases env memory
    pair = spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 1, (3,))))
    assert build_preprocessor(pair, spaces.Discrete(2)).spec.obs_shape == (5,)
    with pytest.raises(TypeError, match="only Discrete, Box and 1-D MultiDiscrete action spaces"):
        build_preprocessor(spaces.Box(0, 1, (2,)), spaces.MultiBinary(2))
    with pytest.raises(ValueError, match="one flag per action"):
        build_preprocessor(spaces.Dict({"observation": spaces.Box(0, 1, (2,)), "action_mask": spaces.Box(0, 1, (3,))}),
                           spaces.Discrete(2))
    with pytest.raises(TypeError, match="unsupported observation space"):
        build_preprocessor(spaces.Text(5), spaces.Discrete(2))
