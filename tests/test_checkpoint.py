"""Checkpoint files: atomic writes, validation of what is read back, no pickle, compatibility."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from pathlib import Path

import numpy as np
import pytest
import torch

from league.checkpoint import (
    CheckpointError,
    check_compatible,
    find_checkpoint,
    list_checkpoints,
    periodic_name,
    prune_checkpoints,
    read_checkpoint,
    write_checkpoint,
)
from league.population.payoff import PayoffTable
from league.population.selfplay import SelfPlayPool

CONFIG = {"env": {"name": "tictactoe", "kwargs": {}}, "algo": {"name": "ppo", "params": {}}, "policies": {}}
SHAPES = {"main": {"w": (3, 2), "b": (2,)}}


def _weights(scale: float = 1.0) -> dict[str, np.ndarray]:
    return {"w": np.arange(6, dtype=np.float32).reshape(3, 2) * scale, "b": np.ones(2, dtype=np.float32) * scale}


def _learner_state(value: float = 1.0) -> bytes:
    import io

    buf = io.BytesIO()
    torch.save({"model": {"w": torch.full((3, 2), value)}, "optimizer": None, "num_updates": 3}, buf)
    return buf.getvalue()


def _write(directory: Path, name: str = "final", iteration: int = 7, scale: float = 1.0, config: dict | None = None) -> Path:
    return write_checkpoint(
        directory,
        name,
        iteration=iteration,
        env_steps=10 * iteration,
        config=config or CONFIG,
        league={"learning": ["main"], "iteration": iteration, "counters": {"num_env_steps_sampled": 10 * iteration}},
        policies={"main": _weights(scale), "main@v1": _weights(2 * scale)},
        learner_states={"main": _learner_state(scale)},
    )


def _rehash(ckpt: Path) -> None:
    """Rewrite the manifest's sizes and hashes to match the files (what an attacker would do)."""
    manifest = json.loads((ckpt / "manifest.json").read_text())
    for name in manifest["files"]:
        data = (ckpt / name).read_bytes()
        manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (ckpt / "manifest.json").write_text(json.dumps(manifest))


def test_round_trip_restores_every_part(tmp_path):
    path = _write(tmp_path)
    assert path == tmp_path / "final" and sorted(os.listdir(path)) == [
        "config.json", "league.json", "learner_main.pt", "manifest.json", "policies.pt"
    ]
    ckpt = read_checkpoint(path)
    assert (ckpt.iteration, ckpt.env_steps) == (7, 70)
    assert ckpt.config == CONFIG and ckpt.league["counters"] == {"num_env_steps_sampled": 70}
    assert set(ckpt.policies) == {"main", "main@v1"}
    np.testing.assert_array_equal(ckpt.policies["main@v1"]["w"], _weights(2.0)["w"])
    assert ckpt.learner_states["main"] == _learner_state()
    # Plain torch files: readable without league, tensors only.
    assert set(torch.load(path / "policies.pt", weights_only=True)) == {"main", "main@v1"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_unsafe_policy_ids_do_not_name_files(tmp_path):
    path = write_checkpoint(
        tmp_path, "c", iteration=1, env_steps=1, config=CONFIG, league={"learning": ["../x"]},
        policies={"../x": _weights()}, learner_states={"../x": _learner_state()},
    )
    assert (path / "learner_0.pt").is_file() and not (tmp_path / "x").exists()
    assert read_checkpoint(path).learner_states["../x"] == _learner_state()


def test_rewrite_replaces_only_once_complete(tmp_path, monkeypatch):
    _write(tmp_path, scale=1.0)
    before = (tmp_path / "final" / "policies.pt").read_bytes()
    calls = {"n": 0}
    real_fsync = os.fsync

    def failing_fsync(fd):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="disk full"):
        _write(tmp_path, scale=5.0)
    monkeypatch.undo()
    assert (tmp_path / "final" / "policies.pt").read_bytes() == before  # old checkpoint intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]  # and no half-written one
    _write(tmp_path, scale=5.0)
    np.testing.assert_array_equal(read_checkpoint(tmp_path / "final").policies["main"]["b"], _weights(5.0)["b"])


def test_truncated_file_is_refused(tmp_path):
    path = _write(tmp_path)
    data = (path / "policies.pt").read_bytes()
    (path / "policies.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"policies.pt: truncated or altered"):
        read_checkpoint(path)


def test_flipped_byte_is_refused(tmp_path):
    path = _write(tmp_path)
    data = bytearray((path / "learner_main.pt").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (path / "learner_main.pt").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"learner_main.pt: corrupt"):
        read_checkpoint(path)


def test_truncated_torch_file_with_matching_manifest_is_refused(tmp_path):
    path = _write(tmp_path)
    data = (path / "policies.pt").read_bytes()
    (path / "policies.pt").write_bytes(data[:100])
    _rehash(path)
    with pytest.raises(CheckpointError, match=r"policies.pt: refused"):
        read_checkpoint(path)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p: (p / "manifest.json").unlink(), r"not a league checkpoint \(no manifest.json\)"),
        (lambda p: (p / "manifest.json").write_text("{"), r"manifest.json: unreadable JSON"),
        (lambda p: (p / "manifest.json").write_text('{"format": "other"}'), r"not a league checkpoint manifest"),
        (lambda p: (p / "league.json").unlink(), r"league.json: missing"),
    ],
)
def test_broken_checkpoint_directories_are_refused(tmp_path, mutate, message):
    path = _write(tmp_path)
    mutate(path)
    with pytest.raises(CheckpointError, match=message):
        read_checkpoint(path)


def test_other_format_version_and_foreign_file_names_are_refused(tmp_path):
    path = _write(tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    (path / "manifest.json").write_text(json.dumps({**manifest, "version": 99}))
    with pytest.raises(CheckpointError, match="format version 99"):
        read_checkpoint(path)
    manifest["learner_states"] = {"main": "../../etc/passwd"}
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="unexpected file name"):
        read_checkpoint(path)


class _CreatesAFile:
    """Unpickling this calls Path.touch: code execution, which a checkpoint must never allow."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.target),))


@pytest.mark.parametrize("victim", ["policies.pt", "learner_main.pt"])
def test_malicious_pickle_is_refused_and_never_runs(tmp_path, victim):
    path = _write(tmp_path / "ckpts")
    marker = tmp_path / "pwned"
    payload = {"main": {"w": _CreatesAFile(marker)}} if victim == "policies.pt" else {"model": _CreatesAFile(marker)}
    torch.save(payload, path / victim)
    # The payload is real: unpickling it without weights_only does create the file.
    torch.load(path / victim, weights_only=False)
    assert marker.exists()
    marker.unlink()
    _rehash(path)  # sizes and hashes match: only the loader can stop it
    with pytest.raises(CheckpointError, match=rf"{victim}: refused: not a tensors-only torch file"):
        read_checkpoint(path)
    assert not marker.exists()


def test_find_list_and_prune(tmp_path):
    root = tmp_path / "run" / "checkpoints"
    for it in (2, 4, 6):
        _write(root, periodic_name(it), iteration=it)
    _write(root, "final", iteration=6)
    (root / ".iter_00000008.tmp-1").mkdir()  # an interrupted write is ignored
    assert [i for i, _ in list_checkpoints(root)] == [2, 4, 6, 6]
    assert find_checkpoint(tmp_path / "run") == root / "final"  # a run directory: its latest
    assert find_checkpoint(root) == root / "final"
    assert find_checkpoint(root / "iter_00000004") == root / "iter_00000004"
    removed = prune_checkpoints(root, keep_last=2)
    assert [p.name for p in removed] == ["iter_00000002"]
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["final", "iter_00000004", "iter_00000006"]
    with pytest.raises(CheckpointError, match="no checkpoint found"):
        find_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        find_checkpoint(tmp_path / "missing")


@pytest.mark.parametrize(
    "config, shapes, message",
    [
        ({**CONFIG, "env": {"name": "connect_four", "kwargs": {}}}, SHAPES, r"env 'tictactoe' \{\} != 'connect_four'"),
        ({**CONFIG, "algo": {"name": "dqn", "params": {}}}, SHAPES, r"policy 'main' algorithm 'ppo' != 'dqn'"),
        (CONFIG, {"other": SHAPES["main"]}, r"learning policies \['main'\] != \['other'\]"),
        (CONFIG, {"main": {"w": (4, 2), "b": (2,)}}, r"policy 'main' model shapes differ \(w: saved \(3, 2\) vs model \(4, 2\)\)"),
        (CONFIG, {"main": {"w": (3, 2)}}, r"b: saved \(2,\) vs model None"),
    ],
)
def test_incompatible_config_is_named(tmp_path, config, shapes, message):
    ckpt = read_checkpoint(_write(tmp_path))
    check_compatible(ckpt, CONFIG, SHAPES)  # the matching config passes
    check_compatible(ckpt, {**CONFIG, "seed": 3, "algo": {"name": "ppo", "params": {"lr": 1.0}}}, SHAPES)  # hyperparameters may change
    with pytest.raises(CheckpointError, match=message):
        check_compatible(ckpt, config, shapes)


def test_selfplay_pool_state_round_trip():
    pool = SelfPlayPool("main", max_snapshots=3, opponent_sampling="pfsp")
    for it in range(1, 5):
        pool.add_snapshot(_weights(float(it)), it)
    pool.payoff.update("main", "main@v3", "win")
    state = json.loads(json.dumps(pool.state()))
    weights = {s.policy_id: s.weights for s in pool.snapshots}

    restored = SelfPlayPool("main", max_snapshots=3, opponent_sampling="pfsp")
    restored.load_state(state, weights)
    assert [s.policy_id for s in restored.snapshots] == ["main@v2", "main@v3", "main@v4"]
    assert restored.opponent_probabilities() == pool.opponent_probabilities()
    assert restored.payoff.counts("main", "main@v3") == (1.0, 0.0, 0.0)
    snap, _ = restored.add_snapshot(_weights(), 9)
    assert snap.policy_id == "main@v5"  # versions continue
    smaller = SelfPlayPool("main", max_snapshots=2)
    smaller.load_state(state, weights)
    assert [s.policy_id for s in smaller.snapshots] == ["main@v3", "main@v4"]
    with pytest.raises(ValueError, match="no weights for snapshot 'main@v2'"):
        SelfPlayPool("main").load_state(state, {})
    with pytest.raises(ValueError, match="pool state is for learning policy 'main', this pool's is 'hero'"):
        SelfPlayPool("hero").load_state(state, weights)
    assert isinstance(restored.payoff, PayoffTable)


_CRASHING_WRITER = """
import os, sys
sys.path.insert(0, sys.argv[1])
from test_checkpoint import _write
from pathlib import Path
crash_at, calls, real_replace = int(sys.argv[3]), [0], os.replace

def replace(src, dst):
    calls[0] += 1
    if calls[0] == crash_at:
        os._exit(17)  # the process dies here: no cleanup, no finally blocks
    real_replace(src, dst)

os.replace = replace
_write(Path(sys.argv[2]), scale=5.0, iteration=9)
"""


@pytest.mark.parametrize("crash_at", [1, 2], ids=["after-write-before-any-rename", "between-the-two-renames"])
def test_a_writer_killed_between_write_and_rename_leaves_the_previous_checkpoint(tmp_path, crash_at):
    import subprocess
    import sys

    _write(tmp_path, scale=1.0, iteration=7)
    done = subprocess.run(
        [sys.executable, "-c", _CRASHING_WRITER, str(Path(__file__).parent), str(tmp_path), str(crash_at)], timeout=120
    )
    assert done.returncode == 17
    hidden = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert hidden, "the crash should have left a hidden directory behind"
    # Listing (and resuming) repairs the directory: the previous checkpoint, whole, under its name.
    assert [(it, p.name) for it, p in list_checkpoints(tmp_path)] == [(7, "final")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]
    np.testing.assert_array_equal(read_checkpoint(tmp_path / "final").policies["main"]["b"], _weights(1.0)["b"])
    _write(tmp_path, scale=5.0, iteration=9)
    assert read_checkpoint(find_checkpoint(tmp_path)).iteration == 9
