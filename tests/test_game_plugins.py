"""The game plug-ins and the seams they use (league/registry.py, league/algos/seams.py,
league/population/scripted.py, league/presets.py): every shipped name resolves, in a fresh
process too (through the ``league.plugins`` entry points); an unknown name is refused with
the known ones listed; a plug-in refuses another game's board by the setting's name; and a
plug-in defined by a user reaches the generic model and PPO's loss."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from league.algos import make_algorithm
from league.algos.models import ConvModel, InputFeaturesModel, build_model, input_features
from league.algos.ppo import AUX_TARGETS, PPO_INPUTS
from league.algos.seams import AUXILIARY_LOSSES, INPUT_FEATURES, ApprovedMovesLoss
from league.envs.base import AgentSpec
from league.games import connect_four, tictactoe
from league.games.connect_four.negamax import ConnectFourNegamaxPolicy
from league.games.connect_four.search import ExactSearchLoss
from league.games.k_in_a_row import THREAT_PLANES, ThreatPlanes, TwoPlySearchLoss
from league.games.tictactoe.minimax import TicTacToeMinimaxPolicy
from league.population.scripted import SCRIPTED_PLAYERS, scripted_factory, scripted_player_names
from league.presets import PRESETS, resolve_preset

C4 = AgentSpec((6, 7, 2), 7, True)
TTT = AgentSpec((3, 3, 2), 9, True)

SHIPPED = {
    "input features": (INPUT_FEATURES, "algo.params.model_kwargs.input_features", ["connect_four_threats", "tictactoe_threats"]),
    "auxiliary loss": (AUXILIARY_LOSSES, "algo.params.aux_loss", ["connect_four_search", "tictactoe_search"]),
    "scripted player": (SCRIPTED_PLAYERS, "league.fixed_opponents", ["minimax", "negamax"]),
    "preset": (PRESETS, "preset", ["connect_four", "kuhn_poker", "leduc_holdem", "leduc_poker", "liars_dice", "tictactoe"]),
}


@pytest.mark.parametrize("kind", SHIPPED)
def test_every_shipped_name_resolves_and_an_unknown_one_lists_them(kind):
    registry, setting, names = SHIPPED[kind]
    for name in names:
        assert registry.get(name, setting) is not None and name in registry
    assert set(names) <= set(registry.names())
    with pytest.raises(ValueError, match=f"{setting}: unknown {kind} 'no_such_name'; known: \\[") as err:
        registry.get("no_such_name", setting)
    assert all(repr(name) in str(err.value) for name in names), str(err.value)
    assert "docs/PLUGINS.md" in str(err.value)  # where a game learns to register its own


def test_a_fresh_process_finds_the_plugins_through_their_entry_points():
    # A Ray sampler builds its models from a config and imports no game: the registries load the
    # league.plugins entry points on the first miss.
    code = (
        "import sys\n"
        "from league.algos.seams import AUXILIARY_LOSSES, INPUT_FEATURES\n"
        "from league.population.scripted import SCRIPTED_PLAYERS\n"
        "from league.presets import PRESETS\n"
        "assert 'league.games.connect_four' not in sys.modules\n"
        "INPUT_FEATURES.get('connect_four_threats', 's'); AUXILIARY_LOSSES.get('tictactoe_search', 's')\n"
        "SCRIPTED_PLAYERS.get('negamax', 's'); PRESETS.get('leduc_poker', 's')\n"
        "print(sorted(m for m in sys.modules if m.startswith('league.games.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = out.stdout
    assert all(f"'league.games.{game}'" in loaded for game in ("connect_four", "tictactoe", "poker")), loaded


def test_the_registered_objects_are_the_games_own():
    features = INPUT_FEATURES.get("connect_four_threats", "s")(C4.obs_shape, C4.num_actions)
    assert isinstance(features, ThreatPlanes) and features.rules is connect_four.RULES
    assert features.channels == len(THREAT_PLANES)
    features = INPUT_FEATURES.get("tictactoe_threats", "s")(TTT.obs_shape, TTT.num_actions)
    assert isinstance(features, ThreatPlanes) and features.rules is tictactoe.RULES
    loss = AUXILIARY_LOSSES.get("connect_four_search", "s")(C4.obs_shape, C4.num_actions, depth=4)
    assert isinstance(loss, ExactSearchLoss) and loss.depth == 4
    assert isinstance(AUXILIARY_LOSSES.get("tictactoe_search", "s")(TTT.obs_shape, TTT.num_actions), TwoPlySearchLoss)
    negamax = scripted_factory("negamax", C4, depth=3).make_policy(seed=0)
    assert isinstance(negamax, ConnectFourNegamaxPolicy) and negamax.depth == 3
    assert isinstance(scripted_factory("minimax", TTT).make_policy(seed=0), TicTacToeMinimaxPolicy)
    assert {"random", "negamax", "minimax"} <= set(scripted_player_names()) and scripted_player_names()[0] == "random"
    assert resolve_preset("auto", "connect_four") is connect_four.PRESET
    assert resolve_preset("auto", "tictactoe") is tictactoe.PRESET
    assert resolve_preset("auto", "no_such_env") is None and resolve_preset("none", "connect_four") is None


def test_every_plugin_name_a_preset_sets_resolves():
    for name in PRESETS.names():
        values = PRESETS.get(name, "preset").values
        params = values.get("algo", {}).get("params", {})
        feature = params.get("model_kwargs", {}).get("input_features")
        assert feature is None or feature in INPUT_FEATURES, (name, feature)
        assert params.get("aux_loss") is None or params["aux_loss"] in AUXILIARY_LOSSES, name
        assert set(values.get("league", {}).get("fixed_opponents", {})) <= set(scripted_player_names()), name


@pytest.mark.parametrize(("build", "setting", "game"), [
    (lambda: ThreatPlanes(connect_four.RULES, (3, 3, 2), 9), "algo.params.model_kwargs.input_features", "connect_four"),
    (lambda: ThreatPlanes(connect_four.RULES, (6, 7, 2), 42), "algo.params.model_kwargs.input_features", "connect_four"),
    (lambda: ThreatPlanes(tictactoe.RULES, (6, 7, 2), 7), "algo.params.model_kwargs.input_features", "tictactoe"),
    (lambda: ExactSearchLoss((3, 3, 2), 9), "algo.params.aux_loss", "connect_four"),
    (lambda: ExactSearchLoss((6, 7, 3), 7, depth=4), "algo.params.aux_loss", "connect_four"),
    (lambda: TwoPlySearchLoss(tictactoe.RULES, (6, 7, 2), 7), "algo.params.aux_loss", "tictactoe"),
])  # fmt: skip
def test_a_plugin_refuses_another_games_board_by_the_settings_name(build, setting, game):
    with pytest.raises(ValueError, match=f"{setting} reads {game} boards .*unset {setting} for this env"):
        build()


def test_a_scripted_player_refuses_another_game_by_name():
    with pytest.raises(ValueError, match="scripted player 'negamax' plays connect four only"):
        scripted_factory("negamax", TTT)
    with pytest.raises(ValueError, match="scripted player 'minimax' plays tic-tac-toe only"):
        scripted_factory("minimax", C4)
    with pytest.raises(ValueError, match="league.scripted: unknown scripted player 'stockfish'; known: .*'negamax'"):
        scripted_factory("stockfish", C4, setting="league.scripted")


class PlaneSum:
    """A user's input features: one channel, the sum of the observation's planes (occupied cells)."""

    channels = 1

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int) -> None:
        self.obs_shape, self.num_actions = obs_shape, num_actions

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.sum(-1, keepdim=True)


@pytest.fixture
def user_registries(monkeypatch):
    """INPUT_FEATURES and AUXILIARY_LOSSES as they are, on copies a test may register into."""
    for registry in (INPUT_FEATURES, AUXILIARY_LOSSES):
        registry.names()  # the shipped plug-ins loaded into the originals first
        monkeypatch.setattr(registry, "_items", dict(registry._items))


def test_a_users_input_features_reach_the_model(user_registries):
    INPUT_FEATURES.register("my_feats", PlaneSum)
    with pytest.raises(ValueError, match="'my_feats' is already registered"):
        INPUT_FEATURES.register("my_feats", ThreatPlanes)
    torch.manual_seed(0)
    model = build_model("conv", (3, 3, 2), 9, input_features="my_feats")
    assert isinstance(model, InputFeaturesModel) and isinstance(model.features, PlaneSum)
    assert model.features.obs_shape == (3, 3, 2) and model.features.num_actions == 9  # the factory saw the agent
    assert isinstance(model.base, ConvModel) and model.base.convs[0].in_channels == 3
    obs = (torch.rand(4, 3, 3, 2) < 0.3).float()
    features = input_features(model, obs)
    assert features.shape == (4, 3, 3, 3)
    assert torch.equal(features[..., :2], obs) and torch.equal(features[..., 2], obs.sum(-1))
    logits, value = model(obs)
    assert logits.shape == (4, 9) and value.shape == (4,)
    torch.testing.assert_close(model(features), (logits, value), rtol=0, atol=0)  # either input, one answer
    with torch.no_grad():
        model.base.convs[0].weight[:, 2:] = 0  # the feature is an input: its weights change the outputs
    assert not torch.allclose(model(obs)[0], logits, atol=1e-5)
    # with a symmetry around the base: the plane sum moves with the board, so d4 stays exact
    sym = build_model("mlp", (3, 3, 2), 9, symmetry="d4", input_features="my_feats")
    rotated = obs.rot90(1, dims=(1, 2))
    torch.testing.assert_close(sym(rotated)[1], sym(obs)[1], rtol=1e-5, atol=1e-5)
    # and through PPO's model_kwargs
    ppo_model = make_algorithm("ppo", TTT, {"model": "conv", "model_kwargs": {"input_features": "my_feats"}}).make_model()
    assert isinstance(ppo_model, InputFeaturesModel) and ppo_model(obs)[0].shape == (4, 9)


def test_a_users_auxiliary_loss_reaches_ppo(user_registries):
    def corner_moves(obs_shape: tuple[int, ...], num_actions: int, corners: tuple[int, ...] = (0, 2, 6, 8)) -> ApprovedMovesLoss:
        def approve(obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            wanted = torch.zeros(num_actions, dtype=torch.bool)
            wanted[list(corners)] = True
            return (mask > 0) & wanted
        return ApprovedMovesLoss(approve)

    AUXILIARY_LOSSES.register("corners", corner_moves)
    algo = make_algorithm("ppo", TTT, {"aux_loss": "corners", "aux_loss_kwargs": {"corners": [0]}, "model": "mlp",
                                       "entropy_coef": 0.0})
    with pytest.raises(ValueError, match="aux_loss_kwargs .*rejected by 'corners'"):
        make_algorithm("ppo", TTT, {"aux_loss": "corners", "aux_loss_kwargs": {"edges": [1]}})
    model = algo.make_model()
    n = 8
    obs, mask = torch.zeros(n, 3, 3, 2), torch.ones(n, 9)
    mb = {"obs": obs, "action_mask": mask, "actions": torch.zeros(n, dtype=torch.long), "action_logp": torch.zeros(n),
          "vf_preds": torch.zeros(n), "advantages": torch.zeros(n), "value_targets": torch.zeros(n),
          AUX_TARGETS: algo.aux.targets(obs, mask)}
    assert set(PPO_INPUTS) <= set(mb) and mb[AUX_TARGETS].nonzero()[:, 1].unique().tolist() == [0]
    _, stats = algo.loss(model, mb)
    logits, _ = model(obs)
    expected = -torch.log_softmax(logits, -1)[:, 0].mean()  # -log P(the one approved move)
    torch.testing.assert_close(stats["aux_loss"], expected.detach(), rtol=1e-5, atol=1e-6)


def test_negamax_reads_openspiel_connect_four_as_the_plugins_own_board():
    # The generic path's connect four (openspiel:connect_four, seat planes on) meets the same
    # negamax: its observations read as the plug-in's board of the same position, for both movers.
    import pyspiel

    from league.envs.openspiel_env import OpenSpielEnv
    from league.games.connect_four.negamax import OpenSpielConnectFourNegamaxPolicy, from_openspiel
    from league.search import simulator_for

    env, sim = OpenSpielEnv("connect_four"), simulator_for("connect_four")
    spec = env.spec("player_0")
    assert isinstance(scripted_factory("negamax", spec, depth=2).make_policy(seed=0), OpenSpielConnectFourNegamaxPolicy)
    rng = np.random.default_rng(0)
    compared = 0
    for _ in range(20):
        game, mine = pyspiel.load_game("connect_four").new_initial_state(), sim.initial_state()
        while not game.is_terminal():
            player = game.current_player()
            np.testing.assert_array_equal(from_openspiel(env.observe(game, player)[None])[0], sim.observation(mine))
            compared += 1
            move = int(rng.choice(game.legal_actions()))
            game.apply_action(move)
            sim.apply(mine, move)
    assert compared > 200
