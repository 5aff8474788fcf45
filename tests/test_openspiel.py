"""OpenSpiel games as league envs (chance handled by the adapter) and exact exploitability."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import torch  # noqa: E402
from scipy.stats import chisquare  # noqa: E402

from league.algos.models import MLPModel  # noqa: E402
from league.algos.torch_policy import ActorCriticPolicy  # noqa: E402
from league.envs import make_env, registered_env_names  # noqa: E402
from league.envs.openspiel_env import OpenSpielEnv  # noqa: E402
from league.policy import Policy, RandomPolicy, RandomPolicyFactory  # noqa: E402
from league.population.exploitability import (  # noqa: E402
    action_probabilities,
    best_response_policy,
    exploitability,
    nash_conv,
    tabular_policy,
)
from league.sampling import FixedMatchups, Sampler  # noqa: E402

PASS, BET = 0, 1  # kuhn actions
FOLD, CALL, RAISE = 0, 1, 2  # leduc actions


def _play(env: OpenSpielEnv, seed: int, moves: list[int]) -> tuple[dict[str, float], list]:
    """Play scripted moves (whoever is to act); returns summed rewards and the time steps."""
    ts = env.reset(seed=seed)
    totals = {a: 0.0 for a in env.possible_agents}
    steps = [ts]
    for move in moves:
        assert not ts.done, "script longer than the episode"
        (agent,) = ts.obs
        ts = env.step({agent: move})
        steps.append(ts)
        for a, r in ts.rewards.items():
            totals[a] += r
    assert ts.done, "script shorter than the episode"
    return totals, steps


def _replayed_returns(game_name: str, history: list[int]) -> list[float]:
    """Returns of a fresh pyspiel state after the same actions, chance outcomes included."""
    state = pyspiel.load_game(game_name).new_initial_state()
    for action in history:
        state.apply_action(action)
    assert state.is_terminal()
    return state.returns()


# ------------------------------------------------------------------------- adapter


def test_short_names_are_registered() -> None:
    names = registered_env_names()
    for game in ("kuhn_poker", "leduc_poker"):
        assert game in names and f"openspiel:{game}" in names
        env = make_env(game)
        assert isinstance(env, OpenSpielEnv) and env.possible_agents == ["player_0", "player_1"]
    with pytest.raises(ValueError, match="api"):
        make_env("kuhn_poker", api="aec")


@pytest.mark.parametrize(
    "moves, showdown_stake, folder",
    [([PASS, PASS], 1, None), ([PASS, BET, BET], 2, None), ([BET, BET], 2, None), ([BET, PASS], 1, 1), ([PASS, BET, PASS], 1, 0)],
)
def test_kuhn_scripted_returns_match_pyspiel(moves: list[int], showdown_stake: int, folder: int | None) -> None:
    env = make_env("kuhn_poker")
    for seed in range(6):
        totals, steps = _play(env, seed, moves)
        history = env.state.history()
        cards = history[:2]  # the two deals, drawn by the adapter
        expected = _replayed_returns("kuhn_poker", history)
        assert [totals["player_0"], totals["player_1"]] == pytest.approx(expected)
        if folder is None:
            winner = 0 if cards[0] > cards[1] else 1
            assert totals[f"player_{winner}"] == showdown_stake
        else:
            assert totals[f"player_{folder}"] == -1
        assert sum(totals.values()) == 0
        # Rewards arrive only with the final move, for both players, once.
        assert all(not ts.rewards or set(ts.rewards.values()) == {0.0} for ts in steps[:-1])
        assert steps[-1].terminated == {"player_0": True, "player_1": True} and not steps[-1].obs


@pytest.mark.parametrize(
    "moves",
    [[CALL, CALL, CALL, CALL], [RAISE, CALL, RAISE, RAISE, CALL], [RAISE, FOLD], [CALL, RAISE, CALL, CALL, RAISE, FOLD]],
)
def test_leduc_scripted_returns_match_pyspiel(moves: list[int]) -> None:
    env = make_env("leduc_poker")
    for seed in range(5):
        totals, steps = _play(env, seed, moves)
        history = env.state.history()
        assert len(history) == len(moves) + 2 + (len(moves) > 2)  # two deals + the public card
        expected = _replayed_returns("leduc_poker", history)
        assert [totals["player_0"], totals["player_1"]] == pytest.approx(expected)
        assert sum(totals.values()) == pytest.approx(0.0)
        # The public card was drawn between rounds: no chance node is ever shown to a player.
        assert all(set(ts.obs) <= {"player_0", "player_1"} for ts in steps)


def test_observations_and_masks_follow_the_state() -> None:
    env = make_env("leduc_poker")
    ts = env.reset(seed=3)
    (agent,) = ts.obs
    state = env.state
    player = state.current_player()
    assert agent == f"player_{player}"
    assert ts.obs[agent].dtype == np.float32 and ts.obs[agent].shape == env.spec(agent).obs_shape == (30,)
    np.testing.assert_array_equal(ts.obs[agent], state.information_state_tensor(player))
    assert ts.masks[agent].dtype == np.int8
    np.testing.assert_array_equal(ts.masks[agent], [0, 1, 1])  # no fold before a bet
    with pytest.raises(ValueError, match="illegal"):
        env.step({agent: FOLD})
    with pytest.raises(ValueError, match="turn"):
        env.step({"player_1" if agent == "player_0" else "player_0": CALL})


def test_reset_seed_replays_and_chance_is_uniform() -> None:
    env = make_env("kuhn_poker")
    env.reset(seed=11)
    first = env.state.history()
    env.reset(seed=11)
    assert env.state.history() == first
    deals = []
    for seed in range(600):
        env.reset(seed=seed)
        deals.append(3 * env.state.history()[0] + env.state.history()[1])
    counts = np.bincount(deals, minlength=9)
    assert counts[[0, 4, 8]].sum() == 0  # never the same card twice
    assert chisquare(counts[[1, 2, 3, 5, 6, 7]]).pvalue > 1e-3


@pytest.mark.parametrize("game, value_p0", [("kuhn_poker", 0.125), ("leduc_poker", -0.078125)])
def test_random_play_statistics(game: str, value_p0: float) -> None:
    env = make_env(game)
    rng = np.random.default_rng(0)
    returns, lengths = [], []
    for episode in range(1500):
        ts = env.reset(seed=episode)
        total = np.zeros(2)
        length = 0
        while not ts.done:
            (agent,) = ts.obs
            ts = env.step({agent: int(rng.choice(np.flatnonzero(ts.masks[agent])))})
            total += [ts.rewards["player_0"], ts.rewards["player_1"]]
            length += 1
        assert total.sum() == pytest.approx(0.0)
        returns.append(total[0])
        lengths.append(length)
    # Exact value of uniform play (open_spiel's expected_game_score), within 4 standard errors.
    assert abs(np.mean(returns) - value_p0) < 4 * np.std(returns) / np.sqrt(len(returns))
    if game == "kuhn_poker":
        share_long = np.mean(np.asarray(lengths) == 3)  # pass then bet: 1/2 * 1/2
        assert abs(share_long - 0.25) < 4 * np.sqrt(0.25 * 0.75 / len(lengths))


def test_truncation_and_errors() -> None:
    env = OpenSpielEnv("leduc_poker", max_episode_steps=2)
    ts = env.reset(seed=0)
    for _ in range(2):
        (agent,) = ts.obs
        ts = env.step({agent: CALL})
    assert ts.done and ts.truncated == {"player_0": True, "player_1": True} and not ts.terminated
    assert set(ts.final_obs) == {"player_0", "player_1"} and ts.final_obs["player_0"].shape == (30,)
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"player_0": CALL})
    with pytest.raises(ValueError, match="observation"):
        OpenSpielEnv("kuhn_poker", observation="pixels")
    with pytest.raises(ValueError, match="cannot load"):
        OpenSpielEnv("no_such_game")
    with pytest.raises(ValueError, match="unknown agent"):
        env.spec("player_7")


def test_simultaneous_games_are_played_turn_based() -> None:
    env = OpenSpielEnv("matrix_rps", observation="info_state")
    totals, _ = _play(env, 0, [0, 1])  # rock vs paper
    assert totals == {"player_0": -1.0, "player_1": 1.0}


def test_sampler_runs_openspiel_episodes() -> None:
    sampler = Sampler(
        "leduc_poker",
        policies={"a": RandomPolicyFactory(), "b": RandomPolicyFactory()},
        matchups=FixedMatchups({"player_0": "a", "player_1": "b"}),
        num_envs=2,
        fragment_length=20,
    )
    sampler.sample()
    stats = sampler.pop_episode_stats()
    assert stats
    for ep in stats:
        assert sum(ep["returns"].values()) == pytest.approx(0.0)
        assert ep["policies"] == {"player_0": "a", "player_1": "b"}


# -------------------------------------------------------------------- exploitability


class KuhnNashPolicy(Policy):
    """A Kuhn equilibrium (alpha = 0) read off the information-state tensor:
    [player one-hot (2), card one-hot J/Q/K (3), per past move (pass, bet) bits (3 x 2)]."""

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        """Not used: exploitability needs only probabilities."""
        raise NotImplementedError

    def action_probabilities(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """P(bet) by card and history; one row per observation."""
        out = np.zeros((len(obs), 2))
        for row, o in enumerate(obs):
            card = int(np.argmax(o[2:5]))
            history = "".join("pb"[int(np.argmax(o[5 + 2 * k : 7 + 2 * k]))] for k in range(3) if o[5 + 2 * k : 7 + 2 * k].any())
            bet = {
                "": (0.0, 0.0, 0.0),  # player 0 opens: always check (alpha = 0)
                "p": (1 / 3, 0.0, 1.0),  # player 1 after a check: bluff J, check Q, bet K
                "b": (0.0, 1 / 3, 1.0),  # player 1 facing a bet: fold J, call Q 1/3, call K
                "pb": (0.0, 1 / 3, 1.0),  # player 0 facing a bet after checking
            }[history][card]
            out[row] = (1.0 - bet, bet)
        return out


def test_uniform_random_exploitability_known_values() -> None:
    assert exploitability("kuhn_poker", RandomPolicy()) == pytest.approx(0.458333, abs=1e-6)
    assert exploitability("leduc_poker", RandomPolicy()) == pytest.approx(2.373611, abs=1e-6)
    assert nash_conv("kuhn_poker", RandomPolicy()) == pytest.approx(2 * 0.458333, abs=1e-5)


def test_equilibrium_is_unexploitable_and_states_are_mapped_correctly() -> None:
    assert exploitability("kuhn_poker", KuhnNashPolicy()) == pytest.approx(0.0, abs=1e-9)
    # One seat at equilibrium, the other random: exploitable, and different from all-random.
    mixed = exploitability("kuhn_poker", [KuhnNashPolicy(), RandomPolicy()])
    assert 0.01 < mixed and mixed != pytest.approx(0.458333, abs=1e-3)


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker", "kuhn_poker(players=3)"])
def test_nash_conv_equals_openspiels_best_responses_on_random_policies(game_name: str) -> None:
    # The vectorised best response must give OpenSpiel's numbers, for skewed random
    # tables (deterministic-looking rows included) and for more than two players.
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability as os_exploitability

    game = pyspiel.load_game(game_name)
    rng = np.random.default_rng(0)
    for _ in range(3):
        table = os_policy.TabularPolicy(game)
        raw = rng.random(table.action_probability_array.shape) ** 4 * table.legal_actions_mask
        table.action_probability_array = raw / raw.sum(axis=1, keepdims=True)
        assert nash_conv(game, table) == pytest.approx(os_exploitability.nash_conv(game, table), abs=1e-9)


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_best_response_policy_is_pure_legal_and_attains_openspiels_best_response_value(game_name: str) -> None:
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import best_response, expected_game_score

    game = pyspiel.load_game(game_name)
    table = os_policy.TabularPolicy(game)
    raw = np.random.default_rng(1).random(table.action_probability_array.shape) ** 3 * table.legal_actions_mask
    table.action_probability_array = raw / raw.sum(axis=1, keepdims=True)
    br = best_response_policy(game, table)
    probs = br.action_probability_array
    assert set(np.unique(probs)) <= {0.0, 1.0} and (probs.sum(axis=1) == 1).all()
    assert (probs <= br.legal_actions_mask).all()
    for player in (0, 1):
        seats = [table, table]
        seats[player] = br
        attained = expected_game_score.policy_value(game.new_initial_state(), seats)[player]
        best = best_response.BestResponsePolicy(game, player, table).value(game.new_initial_state())
        assert attained == pytest.approx(best, abs=1e-9)


def test_actor_critic_probabilities_are_masked_softmax() -> None:
    torch.manual_seed(0)
    model = MLPModel((30,), 3)
    torch.nn.init.normal_(model.pi.weight, std=1.0)
    policy = ActorCriticPolicy(model, learns=False, seed=0)
    obs = np.random.default_rng(0).random((5, 30)).astype(np.float32)
    mask = np.array([[0, 1, 1], [1, 1, 1], [1, 0, 0], [0, 1, 1], [1, 1, 0]], dtype=np.int8)
    probs = action_probabilities(policy, obs, mask)
    logits = model(torch.from_numpy(obs))[0].detach().double().numpy()
    expected = np.where(mask == 1, np.exp(logits), 0.0)
    np.testing.assert_allclose(probs, expected / expected.sum(axis=1, keepdims=True), rtol=1e-6)
    # A flat policy head is uniform over legal moves: exactly the random policy's value.
    torch.nn.init.zeros_(model.pi.weight)
    torch.nn.init.zeros_(model.pi.bias)
    assert exploitability("leduc_poker", policy) == pytest.approx(2.373611, abs=1e-6)


def test_tabular_policy_matches_a_direct_callable() -> None:
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability as os_exploitability

    torch.manual_seed(1)
    model = MLPModel((11,), 2)
    torch.nn.init.normal_(model.pi.weight, std=2.0)
    ours = exploitability("kuhn_poker", ActorCriticPolicy(model, learns=False))

    game = pyspiel.load_game("kuhn_poker")

    def probs(state: pyspiel.State) -> dict[int, float]:
        logits = model(torch.tensor([state.information_state_tensor()]))[0][0].detach().double()
        p = torch.softmax(logits, 0).numpy()
        return {a: float(p[a]) for a in state.legal_actions()}

    direct = os_exploitability.exploitability(game, os_policy.tabular_policy_from_callable(game, probs))
    assert ours == pytest.approx(direct, abs=1e-6)  # float32 logits, batched vs one row
    assert ours > 0.05
    table = tabular_policy("kuhn_poker", ActorCriticPolicy(model, learns=False))
    np.testing.assert_allclose(table.action_probability_array.sum(axis=1), 1.0)


def test_bad_policies_are_rejected() -> None:
    class Cheater(Policy):
        def compute_actions(self, obs, action_mask, explore=True):  # noqa: ANN001, ANN201
            raise NotImplementedError

        def action_probabilities(self, obs, mask):  # noqa: ANN001, ANN201
            return np.tile([0.5, 0.25, 0.25], (len(obs), 1))

    class Opaque(Policy):
        def compute_actions(self, obs, action_mask, explore=True):  # noqa: ANN001, ANN201
            return {"actions": np.zeros(len(obs), dtype=np.int64)}

    with pytest.raises(ValueError, match="illegal"):
        exploitability("leduc_poker", Cheater())
    # A Policy that can only sample: the contract's default names the class and the method.
    with pytest.raises(NotImplementedError, match="Opaque does not implement action_probabilities"):
        exploitability("kuhn_poker", Opaque())
    with pytest.raises(TypeError, match="action_probabilities"):
        exploitability("kuhn_poker", object())
    with pytest.raises(ValueError, match="observation must be one of"):
        exploitability("kuhn_poker", RandomPolicy(), observation="pixels")
    with pytest.raises(ValueError, match="policies"):
        exploitability("kuhn_poker", [RandomPolicy()] * 3)


def test_board_games_observe_their_observation_tensor_channels_last():
    # hex provides no information-state tensor: observation=auto reads the observation tensor,
    # OpenSpiel's [planes, rows, cols] handed over as [rows, cols, planes], the layout the conv reads.
    import pyspiel

    # Hex's tensor is the same for both players (it shows the stones, not whose): the
    # observer's seat follows as two one-hot planes (seat_planes=auto).
    env = OpenSpielEnv("hex", board_size=5)
    assert env.observation == "observation" and env.seat_planes
    assert env.spec("player_0").obs_shape == (5, 5, 9 + 2)
    ts = env.reset(seed=0)
    ts = env.step({"player_0": 7})  # row 1, column 2
    obs = ts.obs["player_1"]
    state = pyspiel.load_game("hex", {"board_size": 5}).new_initial_state()
    state.apply_action(7)
    planes = np.asarray(state.observation_tensor(1), dtype=np.float32).reshape(9, 5, 5)
    np.testing.assert_array_equal(obs[..., :9], planes.transpose(1, 2, 0))
    assert obs[1, 2, :9].sum() == 1 and obs[..., :9].sum() == 25  # one piece, and every cell in exactly one plane
    assert (obs[..., 9] == 0).all() and (obs[..., 10] == 1).all()  # player_1's seat
    plain = OpenSpielEnv("hex", board_size=5, seat_planes=False)
    assert plain.spec("player_0").obs_shape == (5, 5, 9)
    np.testing.assert_array_equal(plain.observe(state, 1), planes.transpose(1, 2, 0))
    # Othello's tensor is the observer's own view already: no seat planes.
    assert not OpenSpielEnv("othello").seat_planes
    kuhn = OpenSpielEnv("kuhn_poker")
    assert kuhn.observation == "info_state" and kuhn.spec("player_0").obs_shape == (11,)


def test_seat_planes_follow_the_setting_and_refuse_what_they_cannot_extend():
    flat = OpenSpielEnv("nim")  # one axis, the same for both players: two entries follow
    assert flat.seat_planes and flat.spec("player_0").obs_shape[0] == len(flat.game.new_initial_state().observation_tensor(0)) + 2
    assert not OpenSpielEnv("gomoku").seat_planes  # [3, 225]: neither planes nor one axis, auto leaves it
    with pytest.raises(ValueError, match="neither planes nor one axis"):
        OpenSpielEnv("gomoku", seat_planes=True)
    with pytest.raises(ValueError, match="seat_planes must be true, false or 'auto'"):
        OpenSpielEnv("hex", seat_planes="yes")


def test_a_tensor_the_game_lacks_is_refused_with_the_one_it_has():
    with pytest.raises(ValueError, match="provides no info_state tensor; it has an observation tensor"):
        OpenSpielEnv("hex", board_size=5, observation="info_state")
    with pytest.raises(ValueError, match="observation must be one of"):
        OpenSpielEnv("kuhn_poker", observation="pixels")
