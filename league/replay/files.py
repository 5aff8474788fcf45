"""Replay files: an uncompressed ``.npz`` read with ``np.load(allow_pickle=False)``.

Nothing from a file is executed and no pickle is read. Every archive holds ``meta``, a
uint8 array of UTF-8 JSON, and numpy arrays (see :mod:`league.replay` for the layout).
A save is written beside the target and renamed over it, so an interrupted save never
leaves a torn file. Every read error becomes :class:`ReplayFileError` naming the path.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["ReplayFileError", "write_npz", "open_npz", "expect", "flatten", "unflatten"]

FORMAT = "league.replay"
MULTI_FORMAT = "league.replay.multi_agent"
#: 1: a ring of rows with uniform or prioritized sampling (the only compositions there
#: were); 2: any composition, as its state dict.
VERSIONS = (1, 2)
COMPOSED = "composed"
_ARRAY = "__array__"
READ_ERRORS = (KeyError, TypeError, ValueError, OverflowError, MemoryError, OSError, EOFError, AttributeError,
                zipfile.BadZipFile)


class ReplayFileError(ValueError):
    """A replay file is truncated, corrupt, foreign or of another buffer kind."""


# ------------------------------------------------------------------------ state trees
def flatten(value: Any, path: str, arrays: dict[str, np.ndarray]) -> Any:
    """A JSON tree with every numpy array replaced by ``{"__array__": name}`` (the array goes to ``arrays``)."""
    if isinstance(value, np.ndarray):
        name = path[:-1]  # "storage/column_0/" -> "storage/column_0"
        arrays[name] = value
        return {_ARRAY: name}
    if isinstance(value, dict):
        return {k: flatten(v, f"{path}{k}/", arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [flatten(v, f"{path}{i}/", arrays) for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        return value.item()
    return value


def unflatten(value: Any, npz: Any, prefix: str, used: set[str]) -> Any:
    if isinstance(value, dict):
        if set(value) == {_ARRAY}:
            name = value[_ARRAY]
            if not isinstance(name, str) or not name.startswith(prefix) or name not in npz.files or name == "meta":
                raise ValueError(f"the metadata names an array {name!r} the file does not hold")
            used.add(name)
            return npz[name]
        return {k: unflatten(v, npz, prefix, used) for k, v in value.items()}
    if isinstance(value, list):
        return [unflatten(v, npz, prefix, used) for v in value]
    return value


# ------------------------------------------------------------------------ npz files
def write_npz(path: str | os.PathLike[str], meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    # Write beside the target, then rename: an interrupted save never leaves a torn file.
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    payload = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    try:
        with open(tmp, "wb") as f:
            np.savez(f, allow_pickle=True, meta=payload, **arrays)  # the default, named: no array name can set it
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextlib.contextmanager
def open_npz(path: str | os.PathLike[str]) -> Iterator[tuple[dict[str, Any], Any]]:
    """Yield ``(meta, npz)`` of a replay file; every read error becomes ReplayFileError."""
    where, npz = os.fspath(path), None
    try:
        try:
            npz = np.load(where, allow_pickle=False)
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise ReplayFileError(f"{where} is a single .npy array, not a league replay file")
            raw = npz["meta"]
            meta = json.loads(raw.tobytes().decode()) if raw.dtype == np.uint8 else None
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as e:
            if isinstance(e, ReplayFileError):
                raise
            raise ReplayFileError(f"{where} is not a readable league replay file "
                                  f"(truncated or foreign): {type(e).__name__}: {e}") from e
        if not isinstance(meta, dict):
            raise ReplayFileError(f"{where} has no league replay metadata")
        yield meta, npz
    finally:
        if npz is not None and hasattr(npz, "close"):
            npz.close()


def expect(meta: dict[str, Any], fmt: str, path: str | os.PathLike[str]) -> None:
    if meta.get("format") != fmt:
        raise ReplayFileError(f"{os.fspath(path)}: expected format {fmt!r}, found {meta.get('format')!r}")
    if meta.get("version") not in VERSIONS:
        raise ReplayFileError(f"{os.fspath(path)}: unsupported format version {meta.get('version')!r}")
