"""Learner actors that die: LearnerDied names what was lost, replace_learner restores it from saved states.

The Ray tests run two learner actors at 0.5 CPU each (with the replacement, 1.5 CPUs at
most: the session's Ray has 2). One actor is killed from outside (``ray.kill``), another
kills itself in the middle of ``learn_on_batch`` (an algorithm whose update exits the
process), so both ways an actor can vanish are covered. The local tests cover the same
API without Ray, sending the restored weights to samplers, reading states from the newest
checkpoint, and finding the error inside the errors a plan wraps it in.
"""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np
import pytest

from league.algos import PPO
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.checkpoint import CheckpointError, write_checkpoint
from league.envs import make_env
from league.envs.base import AgentSpec
from league.flow import PlanError
from league.learn import Learner, LearnerGroup, LearnerConfig
from league.learn.learner_thread import LearnerThreadError
from league.learn.recovery import LearnerDied, find_learner_died, restore_dead_learner, states_from_checkpoint
from league.sampling import FixedMatchups, Sampler

VEC = AgentSpec(obs_shape=(4,), num_actions=3, has_action_mask=True)
SMALL = {"model": "mlp", "model_kwargs": {"hidden": [16]}, "minibatch_size": 16, "num_epochs": 1}


def ppo(hidden: int = 16, cls: type = PPO) -> PPO:
    return cls(VEC, {**SMALL, "model_kwargs": {"hidden": [hidden]}})


def ppo_batch(rows: int, seed: int) -> SampleBatch:
    """A postprocessed PPO batch with random (but legal) contents."""
    rng = np.random.default_rng(seed)
    mask = (rng.random((rows, VEC.num_actions)) < 0.7).astype(np.float32)
    mask[np.arange(rows), rng.integers(0, VEC.num_actions, rows)] = 1.0
    return SampleBatch(
        {
            C.OBS: rng.normal(size=(rows, *VEC.obs_shape)).astype(np.float32),
            C.ACTIONS: np.array([rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64),
            C.ACTION_MASK: mask,
            C.ACTION_LOGP: np.log(1.0 / mask.sum(1)).astype(np.float32),
            C.VF_PREDS: rng.normal(size=rows).astype(np.float32),
            C.ADVANTAGES: rng.normal(size=rows).astype(np.float32),
            C.VALUE_TARGETS: rng.normal(size=rows).astype(np.float32),
        }
    )


def batch_for(pids: list[str], seed: int) -> MultiAgentBatch:
    return MultiAgentBatch({pid: ppo_batch(32, seed * 10 + i) for i, pid in enumerate(pids)}, 32)


def max_diff(a: dict, b: dict) -> float:
    """Largest parameter difference (the weights version counter is not a parameter)."""
    return max(float(np.abs(a[p][k] - b[p][k]).max()) for p in a for k in a[p] if k != "weights_version")


class DyingPPO(PPO):
    """PPO whose update ends the process it runs in: a learner actor dying mid-call."""

    def stack_key(self):
        return None  # updated alone, through learn()

    def learn(self, state, batch):
        os._exit(1)


# Ray: a killed actor, restored -----------------------------------------------------
@pytest.mark.ray
def test_killed_learner_is_named_then_restored_from_saved_states(ray_session):
    ray = ray_session
    assignment = {"a": 0, "b": 1, "c": 1}
    group = LearnerGroup.from_config({"num_learners": 2, "num_cpus_per_learner": 0.5, "assignment": assignment}, seed=7)
    try:
        algos = {"a": ppo(8), "b": ppo(), "c": ppo()}
        group.add_policies(algos)
        pids = list(algos)
        group.learn_on_batch(batch_for(pids, 1))
        states = {pid: group.get_state(pid) for pid in pids}  # "the last checkpoint"
        saved = group.get_weights()
        group.learn_on_batch(batch_for(pids, 2))
        assert max_diff({p: group.get_weights([p])[p] for p in "bc"}, {p: saved[p] for p in "bc"}) > 0

        old = group.learners[1]
        ray.kill(old)
        with pytest.raises(LearnerDied) as info:
            group.learn_on_batch(batch_for(pids, 3))
        died = info.value
        assert (died.learner_index, died.policy_ids) == (1, ["b", "c"])
        assert "learner 1" in str(died) and "['b', 'c']" in str(died)
        assert isinstance(died.__cause__, ray.exceptions.RayActorError)
        assert type(died.__cause__).__name__ in str(died)  # the original cause is in the message
        # Calls that need the dead learner fail the same way; the living one still answers.
        with pytest.raises(LearnerDied, match=r"learner 1 .*\['b', 'c'\]"):
            group.get_weights(["c"])
        with pytest.raises(LearnerDied):
            group.get_state("b")
        survivor = group.get_weights(["a"])

        group.replace_learner(1, states)  # every policy's state: those of learner 0 are ignored
        assert group.learners[1] is not old and group.assignment() == assignment
        restored = group.get_weights()
        assert max_diff({p: restored[p] for p in "bc"}, {p: saved[p] for p in "bc"}) == 0.0
        assert max_diff({"a": restored["a"]}, survivor) == 0.0  # the other learner is untouched
        resources = ray.get(group.learners[1].__ray_call__.remote(lambda _: ray.get_runtime_context().get_assigned_resources()))
        assert resources.get("CPU") == 0.5  # the replacement asked for what the original did

        # Learning continues exactly as from the saved states (optimiser, counters and RNG
        # included), its versions above the 2 the lost learner handed out.
        reference = Learner(seed=7)
        for pid in "bc":
            reference.add_policy(pid, algos[pid])
            reference.set_state(pid, states[pid], min_version=3)
        batch = batch_for(pids, 4)
        assert set(group.learn_on_batch(batch)) == set(pids)
        reference.learn_on_batch(batch.select(["b", "c"]))
        assert max_diff(group.get_weights(["b", "c"]), reference.get_weights()) == 0.0
        assert group.get_state("b") == reference.get_state("b")
    finally:
        group.close()


@pytest.mark.ray
def test_learner_dying_mid_call_names_its_policies(ray_session):
    ray = ray_session
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # actors need DyingPPO
    group = LearnerGroup.from_config(
        {"num_learners": 2, "num_cpus_per_learner": 0.5, "assignment": {"ok": 0, "doomed": 1, "also": 1}}, seed=3
    )
    try:
        group.add_policies({"ok": ppo(), "doomed": ppo(cls=DyingPPO), "also": ppo(8)})
        before = group.get_weights(["ok"])
        with pytest.raises(LearnerDied) as info:
            group.learn_on_batch(batch_for(["ok", "doomed", "also"], 1))
        assert info.value.learner_index == 1
        assert info.value.policy_ids == ["doomed", "also"]
        assert isinstance(info.value.__cause__, ray.exceptions.RayActorError)
        # The survivor finished its part of the call before the error was raised.
        assert max_diff(group.get_weights(["ok"]), before) > 0
        with pytest.raises(ValueError, match=r"no saved state for its policies \['also'\]"):
            group.replace_learner(1, {"doomed": b"x"})
    finally:
        group.close()


# Local: the same API without Ray ---------------------------------------------------
def test_replace_learner_locally_and_its_errors():
    group = LearnerGroup.from_config({"num_learners": 2, "assignment": {"a": 0, "b": 1}}, seed=5, remote=False)
    group.add_policies({"a": ppo(), "b": ppo(8)})
    group.learn_on_batch(batch_for(["a", "b"], 1))
    states, saved = {"b": group.get_state("b")}, group.get_weights()
    group.learn_on_batch(batch_for(["a", "b"], 2))
    after_a = group.get_weights(["a"])
    old = group.learners[1]
    group.replace_learner(1, states)
    assert group.learners[1] is not old and group.learners[1].policy_ids() == ["b"]
    assert max_diff(group.get_weights(["b"]), {"b": saved["b"]}) == 0.0
    assert max_diff(group.get_weights(["a"]), after_a) == 0.0

    with pytest.raises(ValueError, match=r"cannot replace learner 0: no saved state for its policies \['a'\]"):
        group.replace_learner(0, states)
    with pytest.raises(ValueError, match="learner index 2 out of range"):
        group.replace_learner(2, states)
    with pytest.raises(TypeError, match="state of policy 'b' must be bytes"):
        group.replace_learner(1, {"b": saved["b"]})
    with pytest.raises(TypeError, match="states must map policy ids"):
        group.replace_learner(1, [states["b"]])
    with pytest.raises(ValueError, match="without make_learner"):
        LearnerGroup([Learner()]).replace_learner(0, {})


def test_restore_dead_learner_makes_samplers_agree_with_the_restored_learner(monkeypatch):
    env = make_env("tictactoe")
    spec, agents = env.spec(env.possible_agents[0]), list(env.possible_agents)
    env.close()
    algos = {"main": PPO(spec, {**SMALL, "model_kwargs": {"hidden": [8]}}), "other": PPO(spec, SMALL)}
    group = LearnerGroup.from_config({"num_learners": 2, "assignment": {"main": 0, "other": 1}}, seed=2, remote=False)
    group.add_policies(algos)
    sampler = Sampler("tictactoe", policies=algos, matchups=FixedMatchups(dict(zip(agents, algos))), num_envs=2, fragment_length=8)
    states, saved = {"other": group.get_state("other")}, group.get_weights(["other"])
    group.learn_on_batch(sampler.sample())  # both move on; the sampler gets the new weights
    sampler.set_weights(group.get_weights())
    assert max_diff(sampler.get_weights(["other"]), saved) > 0
    restarts = []
    monkeypatch.setattr(sampler, "restart_episodes", lambda: restarts.append(Sampler.restart_episodes(sampler)))

    restored = restore_dead_learner(group, LearnerDied(1, group.policies_on(1), "test"), states, [sampler])
    assert max_diff(restored, saved) == 0.0
    assert max_diff(sampler.get_weights(["other"]), saved) == 0.0  # no divergence left
    assert max_diff(sampler.get_weights(["main"]), group.get_weights(["main"])) == 0.0
    assert len(restarts) == 1  # episodes begun with the lost weights are abandoned


def test_states_come_from_the_newest_checkpoint(tmp_path):
    learner = Learner(seed=1)
    learner.add_policy("a", ppo())
    written = []
    for iteration in (10, 20):
        learner.learn_on_batch(batch_for(["a"], iteration))
        state = learner.get_state("a")
        written.append(state)
        write_checkpoint(tmp_path, f"iter_{iteration:08d}", iteration=iteration, env_steps=iteration, config={},
                         league={}, policies=learner.get_weights(), learner_states={"a": state})
    states, path = states_from_checkpoint(tmp_path, ["a"])
    assert path.name == "iter_00000020" and states == {"a": written[1]}
    assert states_from_checkpoint(tmp_path / "iter_00000010", ["a"])[0] == {"a": written[0]}
    with pytest.raises(CheckpointError, match=r"no learner state for policies \['b'\]"):
        states_from_checkpoint(tmp_path, ["a", "b"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no checkpoint found"):
        states_from_checkpoint(tmp_path / "empty", ["a"])


def test_learner_died_is_found_inside_plan_errors_and_pickles():
    cause = RuntimeError("actor gone")
    died = LearnerDied(2, ["x", "y"], cause)
    assert find_learner_died(died) is died
    wrapped = PlanError("TrainOneStep", ["ParallelRollouts", "TrainOneStep"], died)
    assert find_learner_died(wrapped) is died
    try:  # as the learner thread reports it: LearnerThreadError from LearnerDied, in a PlanError
        try:
            raise died
        except LearnerDied as err:
            raise LearnerThreadError("learner-thread failed") from err
    except LearnerThreadError as thread_err:
        assert find_learner_died(PlanError("LearnerThread", ["LearnerThread"], thread_err)) is died
    assert find_learner_died(PlanError("X", ["X"], ValueError("other"))) is None
    assert find_learner_died(None) is None
    copy = pickle.loads(pickle.dumps(died))
    assert (copy.learner_index, copy.policy_ids) == (2, ["x", "y"]) and "actor gone" in str(copy)


def test_on_failure_setting_is_validated():
    assert LearnerConfig.from_config({"num_learners": 2}).on_failure == "restore"
    assert LearnerConfig.from_config({"on_failure": "stop"}).on_failure == "stop"
    with pytest.raises(ValueError, match="learner.on_failure must be 'restore' or 'stop', got 'retry'"):
        LearnerConfig.from_config({"on_failure": "retry"})


def test_an_error_while_handling_a_learner_death_is_not_one():
    try:
        try:
            raise LearnerDied(0, ["a"], "gone")
        except LearnerDied:
            raise OSError("no checkpoint to restore from")  # noqa: B904 - the implicit context is the point
    except OSError as err:
        assert err.__context__ is not None and find_learner_died(err) is None


@pytest.mark.ray
@pytest.mark.parametrize("on_failure", ["restore", "stop"])
def test_trainer_survives_or_stops_on_a_learner_actor_killed_mid_run(ray_session, tmp_path, on_failure):
    from league.config import parse_run_config
    from league.trainer import Trainer

    cfg = parse_run_config(
        {
            "env": {"name": "tictactoe"},
            "policies": {"a": {"algo": "ppo", "params": {"train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1}},
                         "b": {"algo": "ppo", "params": {"train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1}}},
            "learner": {"num_learners": 2, "num_cpus_per_learner": 0.25, "assignment": {"a": 0, "b": 1}, "on_failure": on_failure},
            "sampler": {"num_samplers": 1, "num_envs": 4, "fragment_length": 16, "num_cpus": 0, "mode": "bulk_sync"},
            "checkpoint": {"interval": 2},
            "eval": {"interval": 0},
            "iteration": {"min_env_steps": 0},
            "stop": {"iterations": 6, "time_s": 0, "env_steps": 0},
            "logging": {"tensorboard": False},
            "verbose": False,
        }
    )
    trainer = Trainer(cfg, tmp_path)
    real_step = trainer.step

    def step_then_kill(elapsed):
        row = real_step(elapsed)
        if trainer.iteration == 3 and trainer.learner_restores == 0:
            ray_session.kill(trainer.learner.learners[1], no_restart=True)
        return row

    trainer.step = step_then_kill
    try:
        if on_failure == "stop":
            with pytest.raises(RuntimeError, match=r"learner.on_failure is 'stop'") as info:
                trainer.train()
            assert "['b']" in str(info.value)
            return
        with pytest.warns(UserWarning, match=r"restored \['b'\] from .*iter_0*2\b"):
            summary = trainer.train()
        assert summary["iterations"] == 6 and summary["learner_restores"] == 1
        # No silent divergence: the sampler acts with exactly the (restored, then trained) learner weights.
        learner_w = trainer.learner.get_weights(["a", "b"])
        sampler_w = ray_session.get(trainer.samplers[0].get_weights.remote(["a", "b"]))
        for pid in ("a", "b"):
            for k, v in learner_w[pid].items():
                np.testing.assert_array_equal(sampler_w[pid][k], v)
    finally:
        trainer.close()


def test_a_replaced_learner_starts_above_every_version_the_lost_one_handed_out():
    # The restored checkpoint is at version 1, the lost learner had reached 3: rows it stamped
    # 2 and 3 (still in samplers, replay or a half-full train batch) must not pass for the
    # restored lineage's versions 2 and 3 after two more updates.
    group = LearnerGroup.from_config({"num_learners": 2, "assignment": {"a": 0, "b": 1}}, seed=5, remote=False)
    group.add_policies({"a": ppo(), "b": ppo(8)})
    group.learn_on_batch(batch_for(["b"], 1))
    state = group.get_state("b")
    assert group.policy_versions(["b"])["b"][0] == 1
    for seed in (2, 3):
        group.learn_on_batch(batch_for(["b"], seed))
    group.get_weights(["b"])  # version 3 handed out to samplers
    group.replace_learner(1, {"b": state})
    version, epoch = group.policy_versions(["b"])["b"]
    assert version == epoch == 4
    group.learn_on_batch(batch_for(["b"], 4))
    assert group.policy_versions(["b"])["b"] == (5, 4)
