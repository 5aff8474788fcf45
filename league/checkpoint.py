"""Training checkpoints: one directory each, written atomically, read back without pickle.

Layout (``"format": "league.checkpoint"``, version 1)::

    manifest.json      format, version, iteration, env steps, and for every other file
                       its size and SHA-256 (written last)
    config.json        the resolved run config
    league.json        counters, learning policy ids, self-play pool, payoff table,
                       evaluation win rates, the driver's RNG states
    policies.pt        {policy_id: {parameter: tensor}}: learning policies and snapshots
    learner_<id>.pt    ``Learner.get_state(id)`` per learning policy (model, optimiser,
                       update count, RNG, algorithm extras such as a target network)

Writing: all files go into a hidden directory beside the target, which is renamed into
place once complete, so a crash never leaves a half-written checkpoint and an existing
one is replaced only by a complete one. Replacing takes two renames (the old one aside,
the new one in); a crash between them leaves the previous checkpoint under its hidden
``.<name>.old-<pid>`` name, which :func:`recover_interrupted_writes` (run before every
write and listing) puts back, also deleting temporary directories of dead writers. Reading: the manifest is checked first (sizes
and hashes catch truncated and corrupted files), JSON is parsed as JSON and tensors are
loaded with ``torch.load(weights_only=True)``, which refuses any pickle that would build
something other than tensors and plain containers. Every problem raises
:class:`CheckpointError` (a ``ValueError``) naming the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "CheckpointError",
    "Checkpoint",
    "write_checkpoint",
    "read_checkpoint",
    "find_checkpoint",
    "list_checkpoints",
    "prune_checkpoints",
    "check_compatible",
    "periodic_name",
    "recover_interrupted_writes",
]

FORMAT = "league.checkpoint"
VERSION = 1
MANIFEST = "manifest.json"
_PERIODIC = re.compile(r"^iter_(\d+)$")
_SAFE_ID = re.compile(r"^[A-Za-z0-9_\-]+$")
_LEARNER_FILE = re.compile(r"^learner_[A-Za-z0-9_\-]+\.pt$")
_HIDDEN = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)$")

Weights = dict[str, dict[str, np.ndarray]]


class CheckpointError(ValueError):
    """A checkpoint is missing, truncated, corrupt, unsafe, or does not fit the run."""


@dataclass
class Checkpoint:
    """A checkpoint as read from disk (validated; weights as numpy arrays)."""

    path: Path
    manifest: dict[str, Any]
    config: dict[str, Any]
    league: dict[str, Any]
    policies: Weights
    learner_states: dict[str, bytes]

    @property
    def iteration(self) -> int:
        """Training iterations completed when it was written."""
        return int(self.manifest["iteration"])

    @property
    def env_steps(self) -> int:
        """Env steps sampled when it was written."""
        return int(self.manifest["env_steps"])


def periodic_name(iteration: int) -> str:
    """Directory name of the periodic checkpoint taken after ``iteration`` (sorts by iteration)."""
    return f"iter_{iteration:08d}"


# Writing ---------------------------------------------------------------------------
def write_checkpoint(
    directory: str | os.PathLike[str],
    name: str,
    *,
    iteration: int,
    env_steps: int,
    config: Mapping[str, Any],
    league: Mapping[str, Any],
    policies: Mapping[str, Mapping[str, np.ndarray]],
    learner_states: Mapping[str, bytes],
) -> Path:
    """Write checkpoint ``directory/name`` atomically (see module doc); returns its path.

    An existing checkpoint of that name is replaced only once the new one is complete.
    """
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"checkpoint name must be a plain directory name, got {name!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    recover_interrupted_writes(directory)
    files: dict[str, bytes] = {
        "config.json": _json_bytes(config),
        "league.json": _json_bytes(league),
        "policies.pt": _torch_bytes(
            {pid: {k: torch.from_numpy(np.array(v, copy=True, order="C")) for k, v in w.items()} for pid, w in policies.items()}
        ),
    }
    learner_files = {}
    for index, (pid, state) in enumerate(learner_states.items()):
        if not isinstance(state, bytes):
            raise TypeError(f"learner state of '{pid}' must be bytes (Learner.get_state), got {type(state).__name__}")
        # Policy ids name files only when that is safe; otherwise their position does.
        fname = f"learner_{pid}.pt" if _SAFE_ID.match(pid) else f"learner_{index}.pt"
        learner_files[pid] = fname
        files[fname] = state
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "iteration": int(iteration),
        "env_steps": int(env_steps),
        "learner_states": learner_files,
        "files": {f: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()} for f, data in files.items()},
    }
    files[MANIFEST] = _json_bytes(manifest)  # last: a directory without it is no checkpoint

    target = directory / name
    tmp = directory / f".{name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        for fname, data in files.items():
            with open(tmp / fname, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        _replace_dir(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _replace_dir(new: Path, target: Path) -> None:
    """Move ``new`` to ``target``; an existing ``target`` is swapped out and deleted afterwards."""
    if not target.exists():
        os.replace(new, target)
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    shutil.rmtree(old, ignore_errors=True)
    os.replace(target, old)
    try:
        os.replace(new, target)
    except OSError:
        os.replace(old, target)  # put the previous checkpoint back
        raise
    shutil.rmtree(old, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_interrupted_writes(directory: str | os.PathLike[str]) -> list[Path]:
    """Undo what a writer that died mid-write left in ``directory``; returns the restored checkpoints.

    A checkpoint moved aside (``.<name>.old-<pid>``) whose target is missing is renamed
    back; temporary and moved-aside directories of writers no longer running are deleted.
    """
    directory = Path(directory)
    restored = []
    for child in sorted(directory.iterdir()) if directory.is_dir() else ():
        match = _HIDDEN.match(child.name)
        if match is None or _pid_alive(int(match["pid"])):
            continue
        target = directory / match["name"]
        try:
            if match["kind"] == "old" and not target.exists() and (child / MANIFEST).is_file():
                os.replace(child, target)
                restored.append(target)
            else:
                shutil.rmtree(child, ignore_errors=True)
        except OSError:  # a read-only directory: reading still works, only the repair does not
            continue
    return restored


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, indent=1, default=_plain).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"checkpoint JSON cannot hold a {type(value).__name__}: {value!r}")


def _torch_bytes(value: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(value, buf)
    return buf.getvalue()


# Reading ---------------------------------------------------------------------------
def read_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Read and validate checkpoint directory ``path`` (see module doc)."""
    path = Path(path)
    if not (path / MANIFEST).is_file():
        what = "no such directory" if not path.exists() else f"not a league checkpoint (no {MANIFEST})"
        raise CheckpointError(f"{path}: {what}")
    manifest = _load_json(path, MANIFEST)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(f"{path / MANIFEST}: not a league checkpoint manifest")
    if manifest.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {manifest.get('version')!r}; this league reads {VERSION}")
    listed, learner_files = manifest.get("files"), manifest.get("learner_states")
    if not isinstance(listed, dict) or not isinstance(learner_files, dict):
        raise CheckpointError(f"{path / MANIFEST}: malformed manifest (files / learner_states)")
    for key in ("iteration", "env_steps"):
        if not isinstance(manifest.get(key), int):
            raise CheckpointError(f"{path / MANIFEST}: malformed manifest ({key})")
    expected = ["config.json", "league.json", "policies.pt", *learner_files.values()]
    for fname in expected:
        # Only the names this format defines are read: a manifest cannot point elsewhere.
        if not isinstance(fname, str) or not (fname in ("config.json", "league.json", "policies.pt") or _is_learner_file(fname)):
            raise CheckpointError(f"{path / MANIFEST}: unexpected file name {fname!r}")
        _verify(path, fname, listed.get(fname))
    config, league = _load_json(path, "config.json"), _load_json(path, "league.json")
    if not isinstance(config, dict) or not isinstance(league, dict):
        raise CheckpointError(f"{path}: config.json and league.json must hold JSON objects")
    raw = _load_tensors(path, "policies.pt")
    if not isinstance(raw, dict) or not all(
        isinstance(w, dict) and all(isinstance(t, torch.Tensor) for t in w.values()) for w in raw.values()
    ):
        raise CheckpointError(f"{path / 'policies.pt'}: expected {{policy_id: {{name: tensor}}}}")
    policies = {str(pid): {k: t.numpy() for k, t in w.items()} for pid, w in raw.items()}
    states = {}
    for pid, fname in learner_files.items():
        data = (path / fname).read_bytes()
        _load_tensors(path, fname, data)  # refused here, before any learner sees it
        states[pid] = data
    return Checkpoint(path, manifest, config, league, policies, states)


def _is_learner_file(fname: str) -> bool:
    return bool(_LEARNER_FILE.match(fname))


def _verify(path: Path, fname: str, entry: Any) -> None:
    file = path / fname
    if not isinstance(entry, dict) or not isinstance(entry.get("bytes"), int) or not isinstance(entry.get("sha256"), str):
        raise CheckpointError(f"{path / MANIFEST}: no size/hash recorded for {fname}")
    if not file.is_file():
        raise CheckpointError(f"{file}: missing")
    size = file.stat().st_size
    if size != entry["bytes"]:
        raise CheckpointError(f"{file}: truncated or altered ({size} bytes, the manifest says {entry['bytes']})")
    if hashlib.sha256(file.read_bytes()).hexdigest() != entry["sha256"]:
        raise CheckpointError(f"{file}: corrupt (SHA-256 differs from the manifest)")


def _load_json(path: Path, fname: str) -> Any:
    try:
        return json.loads((path / fname).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path / fname}: unreadable JSON ({err})") from None


def _load_tensors(path: Path, fname: str, data: bytes | None = None) -> Any:
    try:
        source = io.BytesIO(data if data is not None else (path / fname).read_bytes())
        return torch.load(source, map_location="cpu", weights_only=True)
    except Exception as err:  # any failure means the file is unusable; say why
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(
            f"{path / fname}: refused: not a tensors-only torch file (loaded with weights_only=True): {first}"
        ) from None


# Finding and pruning ---------------------------------------------------------------
def list_checkpoints(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(iteration, path)`` of the complete checkpoints directly in ``directory``, oldest first."""
    directory = Path(directory)
    recover_interrupted_writes(directory)
    found = []
    for child in directory.iterdir() if directory.is_dir() else ():
        if child.name.startswith(".") or not (child / MANIFEST).is_file():
            continue
        try:
            iteration = int(json.loads((child / MANIFEST).read_text())["iteration"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found.append((iteration, child))
    # At equal iterations the final checkpoint is the more complete one (flushed outcomes).
    return sorted(found, key=lambda item: (item[0], item[1].name == "final", item[1].name))


def find_checkpoint(path: str | os.PathLike[str], checkpoint_dir: str = "checkpoints") -> Path:
    """``path`` itself if it is a checkpoint, else the latest checkpoint in ``path`` or in
    ``path/checkpoint_dir`` (a run directory)."""
    path = Path(path)
    if not path.exists() and path.parent.is_dir():
        recover_interrupted_writes(path.parent)  # a crash may have left it moved aside
    if (path / MANIFEST).is_file():
        return path
    if not path.exists():
        raise CheckpointError(f"{path}: no such checkpoint or run directory")
    for directory in (path, path / checkpoint_dir):
        found = list_checkpoints(directory)
        if found:
            return found[-1][1]
    raise CheckpointError(f"{path}: no checkpoint found in it or in {path / checkpoint_dir}")


def prune_checkpoints(directory: str | os.PathLike[str], keep_last: int) -> list[Path]:
    """Delete all but the newest ``keep_last`` periodic (``iter_*``) checkpoints; returns the deleted."""
    if keep_last < 1:
        raise ValueError(f"keep_last must be >= 1, got {keep_last}")
    periodic = [p for _, p in list_checkpoints(directory) if _PERIODIC.match(p.name)]
    doomed = periodic[:-keep_last]
    for p in doomed:
        shutil.rmtree(p)
    return doomed


# Compatibility ---------------------------------------------------------------------
def _algorithm_of(config: Mapping[str, Any], policy_id: str) -> str | None:
    policies = config.get("policies") or {}
    if policies:
        entry = policies.get(policy_id)
        return entry.get("algo") if isinstance(entry, Mapping) else None
    return (config.get("algo") or {}).get("name")


def check_compatible(
    checkpoint: Checkpoint,
    config: Mapping[str, Any],
    model_shapes: Mapping[str, Mapping[str, tuple[int, ...]]],
) -> None:
    """Raise :class:`CheckpointError` listing every way ``checkpoint`` cannot continue this run.

    ``config`` is the new run's resolved config (a plain dict); ``model_shapes`` maps each
    learning policy id to the parameter shapes of a freshly built model. Env, learning
    policy ids, their algorithms and every parameter shape (snapshots included) must
    match; hyperparameters, budgets and the seed may change.
    """
    saved = checkpoint.config
    problems = []
    old_env, new_env = saved.get("env") or {}, config.get("env") or {}
    if (old_env.get("name"), old_env.get("kwargs") or {}) != (new_env.get("name"), new_env.get("kwargs") or {}):
        problems.append(f"env {old_env.get('name')!r} {old_env.get('kwargs') or {}} != {new_env.get('name')!r} {new_env.get('kwargs') or {}}")
    old_ids, new_ids = list(checkpoint.league.get("learning") or []), list(model_shapes)
    if sorted(old_ids) != sorted(new_ids):
        problems.append(f"learning policies {old_ids} != {new_ids}")
    for pid in new_ids:
        old_algo, new_algo = _algorithm_of(saved, pid), _algorithm_of(config, pid)
        if pid in old_ids and old_algo != new_algo:
            problems.append(f"policy '{pid}' algorithm {old_algo!r} != {new_algo!r}")
    missing = [pid for pid in old_ids if pid not in checkpoint.learner_states or pid not in checkpoint.policies]
    if missing:
        problems.append(f"no saved state for learning policies {missing}")
    for pid, weights in checkpoint.policies.items():
        base = pid.split("@", 1)[0]  # snapshots ("main@v3") have their learning policy's model
        if base not in model_shapes or problems:
            continue
        want = {k: tuple(s) for k, s in model_shapes[base].items()}
        have = {k: tuple(v.shape) for k, v in weights.items()}
        if want != have:
            diff = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
            shown = ", ".join(f"{k}: saved {have.get(k)} vs model {want.get(k)}" for k in diff[:3])
            problems.append(f"policy '{pid}' model shapes differ ({shown}{', ...' if len(diff) > 3 else ''})")
    if problems:
        raise CheckpointError(f"checkpoint {checkpoint.path} does not fit this run: " + "; ".join(problems))
