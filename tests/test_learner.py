"""Learner: many policies on one device, stacked updates, add/remove, frozen policies; placement and LearnerGroup."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
import torch

from league.algos import PPO, make_algorithm
from league.learn.algorithm import PolicyState, batch_to_tensors
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs.base import AgentSpec
from league.learn import Learner, LearnerGroup, LearnerConfig, StackedModels, assign_policies, gpus_needed, resource_requests
from league.learn.stacking import stack_signature
from league.sampling.versioning import WEIGHTS_VERSION

VEC = AgentSpec(obs_shape=(4,), num_actions=3, has_action_mask=True)
BOARD = AgentSpec(obs_shape=(3, 3, 2), num_actions=9, has_action_mask=True)
SMALL = {"model": "mlp", "model_kwargs": {"hidden": [16]}, "minibatch_size": 32, "num_epochs": 2}


def ppo_batch(spec: AgentSpec, rows: int, seed: int) -> SampleBatch:
    """A postprocessed PPO batch with random (but legal) contents."""
    rng = np.random.default_rng(seed)
    mask = (rng.random((rows, spec.num_actions)) < 0.7).astype(np.float32)
    mask[np.arange(rows), rng.integers(0, spec.num_actions, rows)] = 1.0
    actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64)
    return SampleBatch(
        {
            C.OBS: rng.normal(size=(rows, *spec.obs_shape)).astype(np.float32),
            C.ACTIONS: actions,
            C.ACTION_MASK: mask,
            C.ACTION_LOGP: np.log(1.0 / mask.sum(1)).astype(np.float32),
            C.VF_PREDS: rng.normal(size=rows).astype(np.float32),
            C.ADVANTAGES: rng.normal(size=rows).astype(np.float32),
            C.VALUE_TARGETS: rng.normal(size=rows).astype(np.float32),
        }
    )


def max_diff(a: dict, b: dict) -> float:
    return max(float(np.abs(a[p][k] - b[p][k]).max()) for p in a for k in a[p])


def _without_version(weights: dict) -> dict:
    return {p: {k: v for k, v in w.items() if k != WEIGHTS_VERSION} for p, w in weights.items()}


class GradPPO(PPO):
    """PPO plus compute_gradients (the gradient of the whole-batch loss), for gradient routing tests."""

    def compute_gradients(self, state: PolicyState, batch: SampleBatch):
        t = batch_to_tensors(batch, list(batch.keys()), next(state.model.parameters()).device)
        loss, stats = self.loss(state.model, t)
        state.model.zero_grad()
        loss.backward()
        return [p.grad.detach().cpu().numpy().copy() for p in state.model.parameters()], stats


class CountingPPO(PPO):
    """Records the size of every stacked group it updates."""

    stacked_groups: list[int] = []

    def learn_stacked(self, states, batches):
        CountingPPO.stacked_groups.append(len(states))
        return super().learn_stacked(states, batches)


class _OptedOutPPO(CountingPPO):
    def stack_key(self):
        return None


# Learner ----------------------------------------------------------------------------
def test_policies_of_different_hyperparameters_and_shapes_learn_independently():
    algos = {
        "small": make_algorithm("ppo", VEC, {**SMALL, "lr": 1e-3}),
        "wide": make_algorithm("ppo", VEC, {**SMALL, "model_kwargs": {"hidden": [32, 32]}, "clip_param": 0.1}),
        "board": make_algorithm("ppo", BOARD, {"model": "conv", "model_kwargs": {"channels": [4], "hidden": 16}, "minibatch_size": 16, "num_epochs": 1}),
    }
    batch = MultiAgentBatch({"small": ppo_batch(VEC, 64, 0), "wide": ppo_batch(VEC, 48, 1), "board": ppo_batch(BOARD, 32, 2)}, 100)
    shared = Learner(seed=7)
    for pid, algo in algos.items():
        shared.add_policy(pid, algo)
    before = shared.get_weights()
    stats = shared.learn_on_batch(batch)
    after = shared.get_weights()
    assert set(stats) == set(algos)
    assert all(np.isfinite(s["total_loss"]) and s["num_sgd_updates"] > 0 for s in stats.values())
    # Each policy's update is exactly what a learner hosting it alone computes.
    for offset, (pid, algo) in enumerate(algos.items()):
        alone = Learner(seed=7)
        alone.add_policy(pid, algo, seed_offset=offset)
        assert max_diff(alone.get_weights(), {pid: before[pid]}) == 0.0
        alone.learn_on_batch(MultiAgentBatch({pid: batch[pid]}, 100))
        assert max_diff(alone.get_weights(), {pid: after[pid]}) == 0.0
        assert max_diff({pid: before[pid]}, {pid: after[pid]}) > 0.0


def test_learns_only_requested_policies_with_rows():
    learner = Learner()
    for pid in ("a", "b", "c"):
        learner.add_policy(pid, make_algorithm("ppo", VEC, SMALL))
    before = learner.get_weights()
    empty = SampleBatch({k: v[:0] for k, v in ppo_batch(VEC, 1, 0).items()})
    batch = MultiAgentBatch({"a": ppo_batch(VEC, 40, 0), "b": ppo_batch(VEC, 40, 1), "c": empty, "stranger": ppo_batch(VEC, 8, 2)}, 40)
    stats = learner.learn_on_batch(batch, ["a", "c"], num_epochs=3)  # TrainOneStep's kwargs are accepted
    assert list(stats) == ["a"]
    after = learner.get_weights()
    assert max_diff({"a": before["a"]}, {"a": after["a"]}) > 0
    assert max_diff({p: before[p] for p in "bc"}, {p: after[p] for p in "bc"}) == 0.0
    with pytest.raises(KeyError, match="'nobody' is not hosted"):
        learner.learn_on_batch(batch, ["nobody"])
    with pytest.raises(TypeError, match="MultiAgentBatch"):
        learner.learn_on_batch(batch["a"])


def _other_algorithms(spec: AgentSpec) -> dict[str, object]:
    """A2C, DQN and IMPALA with default configs, those whose modules exist (imported directly)."""
    import importlib

    found = {}
    for module, cls in (("a2c", "A2C"), ("dqn", "DQN"), ("impala", "IMPALA")):
        try:
            found[module] = getattr(importlib.import_module(f"league.algos.{module}"), cls)(spec)
        except ModuleNotFoundError:
            continue
    return found


def test_algorithms_of_every_kind_share_one_learner():
    from league.sampling import FixedMatchups, Sampler

    spec = BOARD
    algos = {
        "ppo_fast": make_algorithm("ppo", spec, {"lr": 1e-3, "minibatch_size": 32, "num_epochs": 1}),
        "ppo_slow": make_algorithm("ppo", spec, {"lr": 1e-4, "minibatch_size": 64, "num_epochs": 2, "model": "mlp"}),
        **_other_algorithms(spec),
    }
    learner = Learner(seed=1)
    for pid, algo in algos.items():
        learner.add_policy(pid, algo)
    # Pair the policies up on tictactoe (an odd one out plays ppo_fast); one batch from all games.
    ids = list(algos)
    pairs = [(ids[i], ids[i + 1] if i + 1 < len(ids) else "ppo_fast") for i in range(0, len(ids), 2)]
    batches = []
    for seed, (first, second) in enumerate(pairs):
        sampler = Sampler(
            "tictactoe",
            policies={first: algos[first], second: algos[second]},
            matchups=FixedMatchups({"player_1": first, "player_2": second}),
            num_envs=4,
            fragment_length=16,
            seed=seed,
        )
        sampler.set_weights(learner.get_weights([first, second]))
        batches.append(sampler.sample())
    batch = MultiAgentBatch.concat(batches)
    if "dqn" in algos:  # DQN learns from replayed n-step rows: its writer makes them from the sampled ones
        replay = algos["dqn"].make_replay_buffer()
        replay.add(MultiAgentBatch({"dqn": batch["dqn"]}, batch.env_steps))
        replay.flush()
        batch = MultiAgentBatch({**{p: batch[p] for p in batch.policy_batches if p != "dqn"}, "dqn": replay.sample("dqn", 32)}, batch.env_steps)
    before = learner.get_weights()
    stats = learner.learn_on_batch(batch)
    assert set(stats) == set(algos)
    after = learner.get_weights()
    for pid in algos:
        assert max_diff({pid: before[pid]}, {pid: after[pid]}) > 0, pid
    learner.update_target()  # DQN refreshes its target network; the others have none
    if "a2c" in algos:
        grads = learner.compute_gradients(batch, ["a2c"])
        learner.apply_gradients(grads)
        assert max_diff({"a2c": after["a2c"]}, learner.get_weights(["a2c"])) > 0


def test_add_and_remove_policies_while_training():
    learner = Learner(seed=0)
    learner.add_policy("main", make_algorithm("ppo", VEC, SMALL))
    batch = MultiAgentBatch({"main": ppo_batch(VEC, 32, 0), "exploiter": ppo_batch(VEC, 32, 1)}, 32)
    learner.learn_on_batch(batch)  # the exploiter's rows are ignored while it is not hosted
    snapshot = learner.get_weights(["main"])["main"]
    learner.add_policy("main_v1", make_algorithm("ppo", VEC, SMALL), weights=snapshot, frozen=True)
    learner.add_policy("exploiter", make_algorithm("ppo", VEC, {**SMALL, "lr": 1e-3}))
    assert learner.policy_ids() == ["main", "main_v1", "exploiter"]
    assert set(learner.learn_on_batch(batch)) == {"main", "exploiter"}
    learner.remove_policy("main_v1")
    assert set(learner.learn_on_batch(batch)) == {"main", "exploiter"}
    assert learner.policy_ids() == ["main", "exploiter"]
    with pytest.raises(KeyError, match="main_v1"):
        learner.get_weights(["main_v1"])
    with pytest.raises(ValueError, match="already hosted"):
        learner.add_policy("main", make_algorithm("ppo", VEC, SMALL))
    # A re-added id gets fresh seeds, not the removed policy's.
    learner.add_policy("main_v1", make_algorithm("ppo", VEC, SMALL))
    assert max_diff(learner.get_weights(["main_v1"]), {"main_v1": snapshot}) > 0


def test_frozen_policy_has_no_optimizer_and_rejects_gradients():
    learner = Learner()
    algo = GradPPO(VEC, SMALL)
    learner.add_policy("main", algo)
    weights = learner.get_weights(["main"])["main"]
    learner.add_policy("snapshot", algo, weights=weights, frozen=True)
    assert learner.is_frozen("snapshot") and not learner.is_frozen("main")
    state = torch.load(io.BytesIO(learner.get_state("snapshot")), weights_only=True)
    assert state["optimizer"] is None
    assert torch.load(io.BytesIO(learner.get_state("main")), weights_only=True)["optimizer"] is not None

    batch = MultiAgentBatch({"main": ppo_batch(VEC, 32, 0), "snapshot": ppo_batch(VEC, 32, 1)}, 32)
    assert set(learner.learn_on_batch(batch)) == {"main"}
    assert max_diff(learner.get_weights(["snapshot"]), {"snapshot": weights}) == 0.0
    with pytest.raises(ValueError, match="'snapshot' is frozen"):
        learner.learn_on_batch(batch, ["snapshot"])
    with pytest.raises(ValueError, match="'snapshot' is frozen"):
        learner.compute_gradients(batch, ["snapshot"])
    grads = learner.compute_gradients(batch, ["main"])["main"]
    with pytest.raises(ValueError, match="'snapshot' is frozen: it takes no gradients"):
        learner.apply_gradients({"snapshot": grads})
    learner.update_target()  # frozen policies have no target networks to refresh
    assert max_diff(learner.get_weights(["snapshot"]), {"snapshot": weights}) == 0.0


def test_weights_and_state_roundtrip_and_seeding():
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    shuffled = {**SMALL, "minibatch_size": 8}  # four minibatches an epoch, in the order the policy's RNG draws
    a = Learner(seed=3)
    a.add_policy("p", make_algorithm("ppo", VEC, shuffled), seed_offset=5)
    assert torch.equal(torch.rand(1), expected_next)  # adding a policy leaves the global RNG alone
    b = Learner(seed=3)
    b.add_policy("q", make_algorithm("ppo", VEC, SMALL))
    b.add_policy("p", make_algorithm("ppo", VEC, shuffled), seed_offset=5)
    assert max_diff(a.get_weights(), b.get_weights(["p"])) == 0.0

    a.learn_on_batch(MultiAgentBatch({"p": ppo_batch(VEC, 32, 0)}, 32))
    b.set_state("p", a.get_state("p"))
    assert max_diff(a.get_weights(), b.get_weights(["p"])) == 0.0
    batch = MultiAgentBatch({"p": ppo_batch(VEC, 32, 1)}, 32)
    a.learn_on_batch(batch)
    b.learn_on_batch(batch, ["p"])
    # The optimiser state came along, and the minibatch RNG too (the same minibatch order).
    assert max_diff(a.get_weights(), b.get_weights(["p"])) < 1e-6

    with pytest.raises(ValueError, match="do not fit its model"):
        b.set_weights({"p": {"trunk.1.weight": np.zeros((2, 2), np.float32)}})
    with pytest.raises(TypeError, match="must be an Algorithm"):
        b.add_policy("x", object())
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            Learner("cuda")


# Stacked updates -------------------------------------------------------------------
@pytest.mark.parametrize("model", ["mlp", "conv"])
def test_stacked_update_equals_one_by_one(model):
    spec, kwargs = (VEC, {"hidden": [16, 16]}) if model == "mlp" else (BOARD, {"channels": [4, 8], "hidden": 16, "kernel_size": 3, "padding": None})
    configs = [{"model": model, "model_kwargs": kwargs, "minibatch_size": 16, "num_epochs": 2, "lr": lr} for lr in (1e-3, 3e-4, 2e-3)]
    batch = MultiAgentBatch({f"p{i}": ppo_batch(spec, 32, i) for i in range(3)}, 32)
    results = {}
    for stack in (False, True):
        CountingPPO.stacked_groups = []
        learner = Learner(seed=2, stack_same_shaped=stack)
        for i, cfg in enumerate(configs):
            learner.add_policy(f"p{i}", CountingPPO(spec, cfg))
        stats = [learner.learn_on_batch(batch) for _ in range(2)]
        optim = {p: torch.load(io.BytesIO(learner.get_state(p)), weights_only=True)["optimizer"]["state"] for p in learner.policy_ids()}
        results[stack] = (learner.get_weights(), stats, optim)
        assert CountingPPO.stacked_groups == ([3, 3] if stack else [])
    (w0, s0, o0), (w1, s1, o1) = results[False], results[True]
    assert max_diff(w0, w1) < 1e-5
    for a, b in zip(s0, s1):
        for pid in a:
            for key in a[pid]:
                assert a[pid][key] == pytest.approx(b[pid][key], rel=1e-4, abs=1e-5), (pid, key)
    for pid in o0:
        for index, state in o0[pid].items():
            assert float(state["step"]) == float(o1[pid][index]["step"]) == 8.0
            for key in ("exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(state[key], o1[pid][index][key], rtol=1e-4, atol=1e-7)


def test_only_compatible_policies_are_stacked():
    CountingPPO.stacked_groups = []
    learner = Learner(stack_same_shaped=True)
    learner.add_policy("a", CountingPPO(VEC, {**SMALL, "lr": 1e-3}))
    learner.add_policy("b", CountingPPO(VEC, {**SMALL, "lr": 2e-3}))  # only lr differs: stacks with a
    learner.add_policy("c", CountingPPO(VEC, SMALL))  # batch of another length
    learner.add_policy("d", CountingPPO(VEC, {**SMALL, "clip_param": 0.3}))  # other update rule
    learner.add_policy("e", CountingPPO(VEC, {**SMALL, "model_kwargs": {"hidden": [8]}}))  # other shapes
    learner.add_policy("f", PPO(VEC, SMALL))  # no stacking hooks
    learner.add_policy("g", CountingPPO(VEC, SMALL), frozen=True)
    learner.add_policy("h", _OptedOutPPO(VEC, {**SMALL, "lr": 1e-3}))  # stack_key() is None
    rows = {"a": 32, "b": 32, "c": 24, "d": 32, "e": 32, "f": 32, "g": 32, "h": 32}
    batch = MultiAgentBatch({p: ppo_batch(VEC, n, i) for i, (p, n) in enumerate(rows.items())}, 32)
    assert set(learner.learn_on_batch(batch)) == set("abcdefh")
    assert CountingPPO.stacked_groups == [2]


class _FakeStream:
    """Stands in for torch.cuda.Stream so the concurrent path's bookkeeping runs on CPU."""

    def __init__(self, device=None) -> None:
        self.waited_on = 0

    def wait_stream(self, other) -> None:
        other.waited_on += 1


def test_concurrent_stream_path_matches_in_turn(monkeypatch):
    main = _FakeStream()
    created: list[_FakeStream] = []  # every stream the learner made for its tasks
    monkeypatch.setattr(torch.cuda, "Stream", lambda device=None: created.append(_FakeStream(device)) or created[-1])
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: main)
    monkeypatch.setattr(torch.cuda, "stream", lambda stream: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    batch = MultiAgentBatch({f"p{i}": ppo_batch(VEC, 32 + 8 * i, i) for i in range(3)}, 32)
    results = []
    for concurrent in (False, True):
        learner = Learner(seed=1, stack_same_shaped=False)
        learner.overlap_streams = concurrent  # what a CUDA learner sets
        for i in range(3):
            learner.add_policy(f"p{i}", GradPPO(VEC, {**SMALL, "lr": 1e-3 * (i + 1)}))
        stats = learner.learn_on_batch(batch)
        grads = learner.compute_gradients(batch)
        results.append((learner.get_weights(), stats, grads))
        if concurrent:
            broken = MultiAgentBatch({"p0": batch["p0"], "p1": batch["p1"].select([C.OBS])}, 32)
            with pytest.raises(KeyError, match="actions"):
                learner.learn_on_batch(broken)  # a failing policy's error reaches the caller
            learner.close()
    # Every task waited for the main stream, and the main stream for every task's stream,
    # also in the call that failed (3 + 3 + 2 tasks).
    assert main.waited_on == 8
    assert len(created) == 3 and sum(stream.waited_on for stream in created) == 8
    (w0, s0, g0), (w1, s1, g1) = results
    assert max_diff(w0, w1) == 0.0 and s0 == s1
    for pid in g0:
        for a, b in zip(g0[pid], g1[pid]):
            np.testing.assert_array_equal(a, b)


def test_stack_signature_refuses_what_the_stacked_adam_cannot_reproduce():
    model = torch.nn.Linear(3, 2)
    assert stack_signature(model, torch.optim.Adam(model.parameters())) is not None
    assert stack_signature(model, torch.optim.SGD(model.parameters(), lr=0.1)) is None
    assert stack_signature(model, torch.optim.Adam(model.parameters(), weight_decay=0.1)) is None
    assert stack_signature(model, torch.optim.Adam([model.weight])) is None  # not all parameters
    assert stack_signature(torch.nn.Linear(3, 2), None) != stack_signature(torch.nn.Linear(3, 4), None)
    with pytest.raises(ValueError, match="one structure"):
        StackedModels([torch.nn.Linear(3, 2), torch.nn.Linear(3, 4)])


def test_bf16_precision_runs_the_update_in_bfloat16_and_keeps_fp32_weights():
    """learner.precision=bf16: the network's matrix products run in bfloat16 during the update
    (a forward hook sees bf16 outputs), weights stay fp32, and the update lands close to fp32's."""
    batch = MultiAgentBatch({"p": ppo_batch(BOARD, 64, 0)}, 64)
    weights = {}
    for precision in ("fp32", "bf16"):
        learner = Learner("cpu", seed=0, precision=precision)
        algo = make_algorithm("ppo", BOARD, {**SMALL, "model": "conv", "model_kwargs": {}})
        models = []  # the model the learner builds through the algorithm's public make_model
        make_model = algo.make_model
        algo.make_model = lambda *a, **k: models.append(make_model(*a, **k)) or models[-1]
        learner.add_policy("p", algo)
        seen: list[torch.dtype] = []
        # a head: the conv trunk reads its fc's weight without calling the module (models.conv_trunk)
        linear = [m for m in models[-1].modules() if isinstance(m, torch.nn.Linear)][-1]
        linear.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
        stats = learner.learn_on_batch(batch)["p"]
        assert all(np.isfinite(v) for v in stats.values()), stats
        assert seen and set(seen) == ({torch.bfloat16} if precision == "bf16" else {torch.float32})
        weights[precision] = _without_version(learner.get_weights(["p"]))
        assert {v.dtype for v in weights[precision]["p"].values()} == {np.dtype("float32")}
    diff = max_diff(weights["fp32"], weights["bf16"])
    assert 0.0 < diff < 0.05, diff


def test_bf16_precision_reaches_the_stacked_update():
    """Same-shaped policies updated as one vmapped model run under the same autocast."""
    CountingPPO.stacked_groups = []
    batch = MultiAgentBatch({f"p{i}": ppo_batch(VEC, 32, i) for i in range(2)}, 32)
    weights = {}
    for precision in ("fp32", "bf16"):
        learner = Learner(seed=2, precision=precision, stack_same_shaped=True)
        for i in range(2):
            learner.add_policy(f"p{i}", CountingPPO(VEC, {**SMALL, "minibatch_size": 16}))
        stats = learner.learn_on_batch(batch)
        assert all(np.isfinite(v) for pid in stats for v in stats[pid].values()), stats
        weights[precision] = _without_version(learner.get_weights())
    assert CountingPPO.stacked_groups == [2, 2]
    diff = max_diff(weights["fp32"], weights["bf16"])
    assert 0.0 < diff < 0.05, diff  # bf16 changed the stacked update's rounding, and only that


# Placement -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "values, message",
    [
        ({"num_gpus_per_learner": -0.5}, "num_gpus_per_learner must be a number >= 0"),
        ({"num_gpus_per_learner": "half"}, "num_gpus_per_learner must be a number >= 0"),
        ({"device": "cuda", "num_gpus_per_learner": 1.5}, "must be <= 1"),
        ({"device": "cuda", "num_gpus_per_learner": 0.00005}, "multiple of 0.0001"),
        ({"device": "cuda"}, "would see no GPU"),
        ({"num_gpus_per_learner": 0.25}, "reserved and never used"),
        ({"device": "tpu"}, "learner.device must be"),
        ({"num_learners": 0}, "num_learners must be an integer >= 1"),
        ({"num_cpus_per_learner": -1}, "num_cpus_per_learner"),
        ({"num_learners": 2, "assignment": {"main": 2}}, r"assignment\['main'\] = 2 is not a learner index in \[0, 1\]"),
        ({"assignment": ["main"]}, "'auto' or a mapping"),
        ({"precision": "fp16"}, r"learner.precision must be one of \['fp32', 'bf16'\]"),
    ],
)
def test_placement_config_rejects_bad_values(values, message):
    with pytest.raises(ValueError, match=message):
        LearnerConfig(**values)


def test_placement_config_from_sections():
    with pytest.raises(ValueError, match=r"unknown learner config key\(s\) \['num_gpu'\]"):
        LearnerConfig.from_config({"num_gpu": 1})
    from_dataclass = LearnerConfig.from_config(LearnerConfig(device="cpu", num_threads=2))
    assert (from_dataclass.device, from_dataclass.num_threads, from_dataclass.num_learners) == ("cpu", 2, 1)
    from league.config import RunConfig

    assert type(RunConfig().learner) is LearnerConfig  # one learner config: the run's section is learn's


@pytest.mark.parametrize("path", sorted(Path(__file__).parents[1].glob("configs/learner/*.yaml")), ids=lambda p: p.stem)
def test_learner_config_files_are_valid_placements(path):
    from omegaconf import OmegaConf

    cfg = LearnerConfig.from_config(OmegaConf.to_container(OmegaConf.load(path)))
    assert len(resource_requests(cfg)) == cfg.num_learners


def test_fractional_gpu_requests_compose():
    four_share_one = LearnerConfig(device="cuda", num_learners=4, num_gpus_per_learner=0.25, num_cpus_per_learner=0.5)
    assert resource_requests(four_share_one) == [{"num_cpus": 0.5, "num_gpus": 0.25}] * 4
    assert gpus_needed(four_share_one) == 1
    assert gpus_needed(LearnerConfig(device="cuda", num_learners=5, num_gpus_per_learner=0.25)) == 2
    assert gpus_needed(LearnerConfig(device="cuda", num_learners=4, num_gpus_per_learner=0.3)) == 2  # 3 fit on one GPU
    assert gpus_needed(LearnerConfig(device="cuda", num_learners=3, num_gpus_per_learner=0.3333)) == 1
    assert gpus_needed(LearnerConfig(device="cuda", num_learners=1, num_gpus_per_learner=1)) == 1
    assert gpus_needed(LearnerConfig(num_learners=8)) == 0


def test_assign_policies_balances_by_size_and_honours_mapping():
    sizes = {"a": 100, "b": 60, "c": 50, "d": 40, "e": 10}
    # Largest first, each onto the least loaded learner: loads 140 and 120.
    assert assign_policies(sizes, 2) == {"a": 0, "b": 1, "c": 1, "d": 0, "e": 1}
    fixed = assign_policies(sizes, 3, mapping={"e": 2, "a": 2})
    assert fixed["a"] == fixed["e"] == 2 and fixed["b"] != fixed["c"]
    assert assign_policies({"x": 5}, 2, loads=[10, 3]) == {"x": 1}
    with pytest.raises(ValueError, match=r"unknown policies \['ghost'\]"):
        assign_policies(sizes, 2, mapping={"ghost": 0})
    with pytest.raises(ValueError, match="puts 'a' on learner 3"):
        assign_policies(sizes, 2, mapping={"a": 3})


def _group_algos(cls: type[PPO] = GradPPO) -> dict[str, PPO]:
    return {
        "big": cls(VEC, {**SMALL, "model_kwargs": {"hidden": [64, 64]}}),
        "mid": cls(VEC, {**SMALL, "model_kwargs": {"hidden": [48]}}),
        "small": cls(VEC, SMALL),
        "tiny": cls(VEC, {**SMALL, "model_kwargs": {"hidden": [4]}}),
    }


def test_local_learner_group_matches_one_learner():
    group = LearnerGroup.from_config({"num_learners": 2, "assignment": {"tiny": 0}}, seed=4, remote=False)
    single = Learner(seed=4)
    algos = _group_algos()
    group.add_policies(algos)
    for pid, algo in algos.items():
        single.add_policy(pid, algo)
    # Largest first onto the least loaded learner; "tiny" pinned to learner 0 by the mapping.
    assert group.assignment() == {"big": 1, "mid": 0, "small": 0, "tiny": 0}
    assert group.learners[1].policy_ids() == ["big"]
    batch = MultiAgentBatch({pid: ppo_batch(VEC, 32, i) for i, pid in enumerate(algos)}, 32)
    assert group.learn_on_batch(batch).keys() == single.learn_on_batch(batch).keys()
    assert list(group.get_weights()) == list(algos)
    assert max_diff(group.get_weights(), single.get_weights()) == 0.0

    grads = group.compute_gradients(batch, ["big", "tiny"])
    np.testing.assert_array_equal(grads["big"][0], single.compute_gradients(batch, ["big"])["big"][0])
    group.apply_gradients(grads)
    single.apply_gradients(grads)
    assert max_diff(group.get_weights(), single.get_weights()) == 0.0

    group.add_policy("snap", algos["big"], weights=group.get_weights(["big"])["big"], frozen=True)
    assert group.is_frozen("snap") and group.algorithm("snap") is algos["big"]
    assert "snap" not in group.learn_on_batch(MultiAgentBatch({**batch.policy_batches, "snap": batch["big"]}, 32))
    saved = group.get_state("mid"), group.get_weights(["mid"])
    group.learn_on_batch(batch, ["mid"])
    group.set_state("mid", saved[0])
    restored = group.get_weights(["mid"])
    # The weights are back; their version is new (a restore starts an epoch: league.learn.staleness).
    assert max_diff(_without_version(restored), _without_version(saved[1])) == 0.0
    assert restored["mid"][WEIGHTS_VERSION] > saved[1]["mid"][WEIGHTS_VERSION]
    group.remove_policy("snap")
    with pytest.raises(KeyError, match="'snap' is not hosted by this learner group"):
        group.get_weights(["snap"])
    with pytest.raises(ValueError, match="learner index 5 out of range"):
        group.add_policy("x", algos["tiny"], learner=5)


def test_learner_group_drives_a_plan_like_a_learner():
    from league.flow import BroadcastWeights, ParallelRollouts
    from league.sampling import FixedMatchups, Sampler

    spec = AgentSpec(obs_shape=(4,), num_actions=2, has_action_mask=False)
    algo = make_algorithm("ppo", spec, {**SMALL, "train_batch_size": 64})
    group = LearnerGroup.from_config({"num_learners": 2}, remote=False)
    group.add_policies({"main": algo})
    sampler = Sampler("cartpole", policies={"main": algo}, matchups=FixedMatchups({"agent_0": "main"}), num_envs=2, fragment_length=32)
    plan = algo.plan_fragment(ParallelRollouts([sampler], mode="bulk_sync"), group, ["main"]).for_each(BroadcastWeights(group, [sampler], ["main"]))
    result = next(plan)
    assert "main" in result.stats
    assert max_diff(sampler.get_weights(["main"]), group.get_weights(["main"])) == 0.0


def test_learner_group_rejects_unknown_policy_in_mapping():
    group = LearnerGroup.from_config({"num_learners": 2, "assignment": {"mian": 1}}, remote=False)
    with pytest.raises(ValueError, match=r"unknown policies \['mian'\]"):
        group.add_policies({"main": PPO(VEC, SMALL)})


@pytest.mark.ray
def test_learner_group_of_ray_actors(ray_session):
    # One GPU more than the cluster has (0 here; 1 on a GPU machine), asked for in quarters.
    gpus = int(ray_session.cluster_resources().get("GPU", 0))
    with pytest.raises(ValueError, match=rf"needs {gpus + 1} GPU\(s\) but the Ray cluster has {gpus}$"):
        LearnerGroup.from_config({"device": "cuda", "num_gpus_per_learner": 0.25, "num_learners": 4 * (gpus + 1)})
    group = LearnerGroup.from_config({"num_learners": 2, "num_cpus_per_learner": 0}, seed=4)
    try:
        local = LearnerGroup.from_config({"num_learners": 2}, seed=4, remote=False)
        algos = _group_algos(PPO)  # Ray workers cannot import classes defined in tests
        group.add_policies(algos)
        local.add_policies(algos)
        batch = MultiAgentBatch({pid: ppo_batch(VEC, 32, i) for i, pid in enumerate(algos)}, 32)
        assert set(group.learn_on_batch(batch)) == set(algos)
        local.learn_on_batch(batch)
        assert max_diff(group.get_weights(), local.get_weights()) == 0.0
    finally:
        group.close()
