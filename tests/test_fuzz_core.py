"""Fuzzing the C++ core through its Python faces: ``SampleBatch.concat`` and the replay buffers.

Hypothesis draws schemas (bool to complex, byte-swapped, 0-row batches, zero-width and
up to 64-dimensional columns), memory layouts (Fortran order, strided, negative, zero
and misaligned strides), wrong schemas, indexes, priorities, capacities, alpha and beta.
The property everywhere: a call either raises the ValueError/TypeError its contract
names, leaving the buffer exactly as it was, or returns what a numpy reference computes
(``replay_oracle.OracleReplay`` for the buffers). Nothing may crash: ``.ci/sanitize``
runs this file against an ASan/UBSan build of the core.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_oracle import OracleReplay

from league.batch import MultiAgentBatch, SampleBatch
from league.replay import ArrayStorage, MultiAgentReplayBuffer, PrioritizedReplayBuffer, PrioritizedSampler
from league.replay import ReplayBuffer, ReplayFileError, RingWriter, UniformSampler

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

STORABLE = [np.dtype(t) for t in ("bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16",
                                  "float32", "float64", "complex64", "complex128", ">f4", ">i8")]
# Plain bytes without references: concat copies them, replay refuses them.
CONCAT_ONLY = [np.dtype(t) for t in ("M8[ns]", "m8[s]", "U3", "S2", "V4")] + [np.dtype([("f", "<f4"), ("i", ">i2")])]
# Bytes that are references: copying them without reference counts would free objects twice.
HOLDS_OBJECTS = [np.dtype(object), np.dtype([("f", "f4"), ("o", "O")]), np.dtype((np.dtype([("o", "O")]), (2,)))]
NAMES = ["obs", "a", "x.y", "é", ""]
LAYOUTS = ("c", "fortran", "strided", "reversed", "broadcast", "misaligned")
SPECIAL_PRIORITIES = [math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 5e-324, 1e-310, 2.2e-308, 1e-300,
                      1e-200, 1e200, 1e300, 1.7976931348623157e308]

Schema = dict[str, tuple[np.dtype, tuple[int, ...]]]


# ----------------------------------------------------------------------- strategies
def trailing_shapes() -> st.SearchStrategy[tuple[int, ...]]:
    """Small trailing shapes (zero-width included), sometimes 9 to 63 dimensions of size 1."""
    small = st.lists(st.integers(0, 3), max_size=3).map(tuple)
    tall = st.integers(8, 62).map(lambda nd: (1,) * nd)  # rows + one more by mutate(): 64, numpy's limit
    return st.one_of(small, small, small, tall)


def schemas(dtypes: list[np.dtype]) -> st.SearchStrategy[Schema]:
    """One to four uniquely named columns."""
    names = st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True)
    return names.flatmap(lambda ns: st.tuples(*[st.tuples(st.sampled_from(dtypes), trailing_shapes()) for _ in ns])
                         .map(lambda specs: dict(zip(ns, specs))))


def priorities_for(rows: int) -> st.SearchStrategy[object]:
    """Priorities for ``rows`` rows: special and ordinary values, odd dtypes, wrong lengths or ranks."""
    value = st.one_of(st.sampled_from(SPECIAL_PRIORITIES), st.floats(1e-3, 1e3))
    length = st.one_of(st.just(rows), st.just(rows), st.integers(0, rows + 2))
    dtype = st.sampled_from(["float64", "float64", "float32", "float16", "int64", "bool", "complex128", "U4"])
    plain = st.tuples(length.flatmap(lambda n: st.lists(value, min_size=n, max_size=n)), dtype)
    array = plain.map(lambda t: _cast(np.array(t[0], dtype=np.float64), t[1]))
    return st.one_of(array, array, array, array.map(lambda a: a.reshape(1, -1)), array.map(lambda a: a[::-1]))


def _cast(values: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dtype in ("int64", "bool"):
            values = np.nan_to_num(values, nan=0.0, posinf=1e18, neginf=-1e18).clip(-1e18, 1e18)
        return values.astype(dtype)


# ----------------------------------------------------------------------- array makers
def make_column(rng: np.random.Generator, dtype: np.dtype, rows: int, trailing: tuple[int, ...], layout: str) -> np.ndarray:
    """Random values of ``dtype`` in the given memory layout (every bit pattern but bool's)."""
    shape = (rows, *trailing)
    count = math.prod(shape)
    if dtype.kind == "b":
        base = rng.integers(0, 2, count).astype(bool).reshape(shape)
    else:
        base = np.frombuffer(rng.bytes(count * dtype.itemsize), dtype=dtype).reshape(shape).copy()
    if layout == "fortran":
        return np.asfortranarray(base)
    if layout == "strided":
        return np.repeat(base, 2, axis=0)[::2]
    if layout == "reversed":
        return np.ascontiguousarray(base[::-1])[::-1]
    if layout == "broadcast" and rows:
        return np.broadcast_to(base[:1], shape)  # zero row stride, read-only
    if layout == "misaligned":
        raw = np.zeros(base.nbytes + 1, np.uint8)[1:]
        out = raw.view(dtype).reshape(shape) if base.nbytes else base
        out[...] = base
        return out
    return base


def make_batch(rng: np.random.Generator, schema: Schema, rows: int, layouts: list[str]) -> dict[str, np.ndarray]:
    """Columns for ``schema`` with ``rows`` rows, one layout per column."""
    return {name: make_column(rng, dt, rows, tr, layouts[k % len(layouts)])
            for k, (name, (dt, tr)) in enumerate(schema.items())}


def mutate(schema: Schema, kind: str, rng: np.random.Generator) -> Schema:
    """A deliberately wrong schema: a column dropped, added, retyped or reshaped."""
    out = dict(schema)
    name = list(out)[int(rng.integers(len(out)))]
    dtype, trailing = out[name]
    if kind == "drop":
        del out[name]
    elif kind == "extra":
        out[f"extra{len(out)}"] = (np.dtype("float32"), ())
    elif kind == "retype":
        out[name] = (np.dtype("int16") if dtype != np.dtype("int16") else np.dtype("uint16"), trailing)
    elif kind == "reshape":
        out[name] = (dtype, (*trailing, 2))
    return out


def same_bytes(got: np.ndarray, expected: np.ndarray) -> bool:
    return got.dtype == expected.dtype and got.shape == expected.shape and got.tobytes() == expected.tobytes()


# ----------------------------------------------------------------------- concat
@FUZZ
@given(schema=schemas(STORABLE + CONCAT_ONLY), data=st.data())
def test_concat_matches_numpy_or_names_the_bad_column(schema: Schema, data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n_batches = data.draw(st.integers(1, 4))
    batches, wrong = [], set()
    for b in range(n_batches):
        kind = data.draw(st.sampled_from(["ok", "ok", "ok", "empty", "drop", "extra", "retype", "reshape"]))
        if kind == "empty":
            batches.append(SampleBatch())
            continue
        own = mutate(schema, kind, rng) if b and kind != "ok" else schema
        wrong |= (set(own) ^ set(schema)) | {k for k in own if k in schema and own[k] != schema[k]}
        layouts = data.draw(st.lists(st.sampled_from(LAYOUTS), min_size=1, max_size=4))
        batches.append(SampleBatch(make_batch(rng, own, data.draw(st.integers(0, 5)), layouts)))
    parts = [b for b in batches if len(b.keys())]
    first = parts[0] if parts else None
    if len(parts) > 1 and any(set(p.keys()) != set(first.keys()) or any(
            p[k].dtype != first[k].dtype or p[k].shape[1:] != first[k].shape[1:] for k in first if k in p) for p in parts):
        with pytest.raises(ValueError) as err:
            SampleBatch.concat(batches)
        assert any(f"'{name}'" in str(err.value) for name in wrong), str(err.value)
        return
    out = SampleBatch.concat(batches)
    assert len(out) == sum(len(p) for p in parts)
    assert list(out.keys()) == (list(first.keys()) if first is not None else [])
    for name in out:
        got = out[name]
        assert got.dtype == first[name].dtype and got.shape == (len(out), *first[name].shape[1:]), name
        assert got.tobytes() == b"".join(np.ascontiguousarray(p[name]).tobytes() for p in parts), name
        assert got.flags.c_contiguous and got.flags.writeable
        assert not any(np.shares_memory(got, p[name]) for p in parts)


@FUZZ
@given(dtype=st.sampled_from(HOLDS_OBJECTS), rows=st.integers(0, 4), copies=st.integers(2, 3),
       layout=st.sampled_from(LAYOUTS), capacity=st.integers(1, 4))
def test_columns_holding_objects_are_refused_everywhere(dtype: np.dtype, rows: int, copies: int, layout: str,
                                                        capacity: int) -> None:
    objects = np.zeros(rows, dtype=dtype)
    with pytest.raises(TypeError, match="Python objects"):
        SampleBatch({"o": objects})
    batch = SampleBatch({"x": make_column(np.random.default_rng(rows), np.dtype("float32"), rows, (2,), layout)})
    batch["o"] = objects  # __setitem__ checks rows only: the core must still refuse it
    with pytest.raises(TypeError, match="column 'o'.*Python objects"):
        SampleBatch.concat([batch] * copies)
    with pytest.raises(TypeError, match="column 'o'"):
        ReplayBuffer(capacity).add(batch)


# ----------------------------------------------------------------------- replay reference
def priority_bounds(alpha: float, capacity: int) -> tuple[float, float]:
    """The accepted raw-priority range of the C++ core: p ** alpha within [1e-300, 1e300 / leaves]."""
    if alpha == 0:
        return 0.0, math.inf
    leaves = 1 << max(capacity - 1, 0).bit_length()

    def power(x: float, y: float) -> float:
        try:
            return math.pow(x, y)
        except OverflowError:
            return math.inf

    return power(1e-300, 1.0 / alpha), power(1e300 / leaves, 1.0 / alpha)


def priority_error(p: object, rows: int, alpha: float, capacity: int) -> type[Exception] | None:
    """The exception ``p`` (priorities for ``rows`` rows) must raise, or None if it is valid."""
    a = np.asarray(p)
    if a.dtype.kind not in "iuf":
        return TypeError
    if a.ndim != 1 or len(a) != rows:
        return ValueError
    v = a.astype(np.float64)
    low, high = priority_bounds(alpha, capacity)
    ok = (v > 0) & np.isfinite(v) & (v >= low) & (v <= high)
    return None if ok.all() else ValueError


def add_error(schema: Schema | None, columns: dict[str, np.ndarray], reserved: tuple[str, ...]) -> tuple[type[Exception], str] | None:
    """The (exception, column) an add of ``columns`` must raise against ``schema`` (None: not fixed yet)."""
    if any(a.dtype == object for a in columns.values()):
        return TypeError, next(k for k, a in columns.items() if a.dtype == object)
    if schema is None:
        if not columns:
            return ValueError, ""
        for name, a in columns.items():
            if name in reserved:
                return ValueError, name
            if a.dtype.kind not in "biufc":
                return TypeError, name
        return None
    if len(columns) != len(schema):
        extra = [k for k in columns if k not in schema]
        if extra:
            return ValueError, extra[0]
    for name, (dtype, trailing) in schema.items():
        if name not in columns or columns[name].shape[1:] != trailing:
            return ValueError, name
        if columns[name].dtype != dtype:
            return TypeError, name
    return None


class Checked:
    """A buffer and its oracle, stepped together and compared after every call.

    ``storage`` "ring": the C++ ring (checks in the bindings); "array": the numpy storage
    with the same sampler and a FIFO writer (checks in Python, the trees still C++).
    """

    def __init__(self, capacity: int, alpha: float | None, seed: int, storage: str = "ring") -> None:
        if storage == "ring":
            self.buf = ReplayBuffer(capacity, seed=seed) if alpha is None else PrioritizedReplayBuffer(capacity, alpha, seed)
        else:
            sampler = UniformSampler() if alpha is None else PrioritizedSampler(alpha)
            self.buf = ReplayBuffer(ArrayStorage(capacity), sampler, RingWriter(), seed=seed)
        self.oracle = OracleReplay(capacity, alpha)
        self.schema: Schema | None = None
        self.reserved = ("batch_indexes",) if alpha is None else ("batch_indexes", "weights")

    def add(self, columns: dict[str, np.ndarray], priorities: object = None) -> None:
        rows = len(next(iter(columns.values()))) if columns else 0
        expected = add_error(self.schema, columns, self.reserved)
        if expected is None and priorities is not None:
            err = priority_error(priorities, rows, self.oracle.alpha, self.oracle.capacity)
            expected = None if err is None else (err, "priorities")
        args = () if priorities is None else (priorities,)
        if expected is not None:
            with pytest.raises(expected[0]) as info:
                self.buf.add(columns, *args)
            assert expected[1] in str(info.value), str(info.value)
        else:
            self.buf.add(SampleBatch(columns) if rows % 2 else columns, *args)
            self.oracle.add({k: np.ascontiguousarray(v) for k, v in columns.items()}, priorities)
            if self.schema is None:
                self.schema = {k: (v.dtype, v.shape[1:]) for k, v in columns.items()}
        self.compare()

    def sample(self, n: int, beta: float) -> None:
        prioritized = self.oracle.alpha is not None
        kwargs = {"beta": beta} if prioritized else {}
        if n <= 0 or self.oracle.size == 0 or (prioritized and not 0 <= beta <= 1):
            with pytest.raises(ValueError):
                self.buf.sample(n, **kwargs)
            return
        out = self.buf.sample(n, **kwargs)
        idx = out["batch_indexes"]
        assert len(out) == n and idx.dtype == np.int64 and ((idx >= 0) & (idx < self.oracle.size)).all()
        for name, column in self.oracle.stored().items():
            assert same_bytes(out[name], column[idx]), name
        if prioritized:
            leaves = self.oracle.leaves[: self.oracle.size]
            expected = (leaves.min() / leaves[idx]) ** beta
            np.testing.assert_allclose(out["weights"], expected.astype(np.float32), rtol=1e-5, atol=1e-37)

    def update(self, indexes: object, priorities: object) -> None:
        idx = np.asarray(indexes)
        expected = TypeError if idx.dtype.kind not in "iu" else ValueError if idx.ndim != 1 else None
        if expected is None:
            expected = priority_error(priorities, len(idx), self.oracle.alpha, self.oracle.capacity)
        if expected is None and not ((idx.astype(np.int64) >= 0) & (idx.astype(np.int64) < self.oracle.size)).all():
            expected = ValueError
        if expected is not None:
            with pytest.raises(expected):
                self.buf.update_priorities(indexes, priorities)
        else:
            self.buf.update_priorities(indexes, priorities)
            self.oracle.update_priorities(idx, np.asarray(priorities, dtype=np.float64))
        self.compare()

    def compare(self) -> None:
        assert len(self.buf) == self.oracle.size
        if self.schema is not None:
            assert [(n, d, t) for n, d, t in self.buf.schema()] == [(n, d, t) for n, (d, t) in self.schema.items()]
            stored = self.buf.stored()
            for name, column in self.oracle.stored().items():
                assert same_bytes(stored[name], column), name
        if self.oracle.alpha is not None:
            np.testing.assert_allclose(self.buf.leaf_values(), self.oracle.leaves[: self.oracle.size], rtol=1e-12)
            assert self.buf.max_priority == self.oracle.max_priority


def draw_indexes(data: st.DataObject, size: int, capacity: int) -> object:
    """Valid, negative, never-written, huge, float, bool or 2-D batch indexes."""
    valid = st.integers(0, max(size - 1, 0))
    wild = st.sampled_from([-1, -(2**40), size, capacity, capacity + 1, 2**62, 2**63 - 1])
    values = data.draw(st.lists(st.one_of(valid, valid, wild), max_size=6))
    dtype = data.draw(st.sampled_from(["int64", "int64", "int32", "uint64", "float64", "bool"]))
    arr = np.array(values, dtype=np.int64)
    if dtype == "uint64":
        arr = arr[arr >= 0].astype(np.uint64)
    elif dtype == "int32":
        arr = arr[(arr >= -(2**31)) & (arr < 2**31)].astype(np.int32)
    else:
        arr = arr.astype(dtype)
    return arr.reshape(1, -1) if data.draw(st.integers(0, 9)) == 0 else arr


def priorities_or_none(data: st.DataObject, rows: int) -> object:
    return None if data.draw(st.booleans()) else data.draw(priorities_for(rows))


ALPHAS = st.one_of(st.sampled_from([0.0, 5e-324, 1e-10, 0.6, 1.0, 7.5, 1e6, 1e308]), st.floats(0, 10))
BETAS = st.one_of(st.sampled_from([0.0, 1.0, -0.0, -1e-9, 1.0000001, math.nan, math.inf]), st.floats(0, 1))


# ----------------------------------------------------------------------- replay fuzz
@FUZZ
@given(capacity=st.integers(1, 9), prioritized=st.booleans(), alpha=ALPHAS, seed=st.integers(0, 2**64 - 1),
       schema=schemas(STORABLE), storage=st.sampled_from(["ring", "array"]), data=st.data())
def test_replay_buffers_match_the_oracle_or_refuse_cleanly(
    capacity: int, prioritized: bool, alpha: float, seed: int, schema: Schema, storage: str, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    buf = Checked(capacity, alpha if prioritized else None, seed, storage)
    for op in data.draw(st.lists(st.sampled_from(["add", "add", "bad_add", "sample", "update"]), max_size=12)):
        if op in ("add", "bad_add"):
            kind = "ok" if op == "add" else data.draw(st.sampled_from(["drop", "extra", "retype", "reshape", "reserved"]))
            own = schema if kind in ("ok", "reserved") else mutate(schema, kind, rng)
            rows = data.draw(st.integers(0, 2 * capacity + 2))
            columns = make_batch(rng, own, rows, data.draw(st.lists(st.sampled_from(LAYOUTS), min_size=1, max_size=3)))
            if kind == "reserved":
                columns[data.draw(st.sampled_from(buf.reserved))] = np.zeros(rows, np.int64)
            buf.add(columns, priorities_or_none(data, rows) if prioritized else None)
        elif op == "sample":
            buf.sample(data.draw(st.integers(-2, 12)), data.draw(BETAS))
        elif prioritized:
            idx = draw_indexes(data, len(buf.buf), capacity)
            n = np.asarray(idx).shape[-1] if np.asarray(idx).ndim else 0
            buf.update(idx, data.draw(priorities_for(n)))


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), prioritized=st.booleans(), data=st.data())
def test_multi_agent_buffer_adds_policy_by_policy_or_refuses(seed: int, prioritized: bool, data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    capacity, alpha = data.draw(st.integers(1, 6)), (0.6 if prioritized else None)
    kwargs = {"capacity": capacity, "seed": seed} | ({"alpha": alpha} if prioritized else {})
    multi = MultiAgentReplayBuffer(PrioritizedReplayBuffer if prioritized else ReplayBuffer, **kwargs)
    reserved = ("batch_indexes",) if alpha is None else ("batch_indexes", "weights")
    schema_of = {pid: data.draw(schemas(STORABLE)) for pid in ("p0", "p1", "p2")}
    refs: dict[str, tuple[OracleReplay, Schema | None]] = {}
    for _ in range(data.draw(st.integers(1, 6))):
        parts, prios = {}, {}
        for pid in data.draw(st.lists(st.sampled_from(list(schema_of)), min_size=1, max_size=3, unique=True)):
            kind = data.draw(st.sampled_from(["ok", "ok", "ok", "drop", "retype", "reshape"]))
            own = schema_of[pid] if kind == "ok" else mutate(schema_of[pid], kind, rng)
            parts[pid] = make_batch(rng, own, data.draw(st.integers(0, capacity + 2)), ["c", "reversed"])
            if prioritized and data.draw(st.booleans()):
                prios[pid] = data.draw(priorities_for(len(next(iter(parts[pid].values()), []))))
        batch = MultiAgentBatch({pid: SampleBatch(cols) for pid, cols in parts.items()}, 1)
        if data.draw(st.integers(0, 9)) == 0:
            with pytest.raises(ValueError, match="ghost"):
                multi.add(batch, {**prios, "ghost": [1.0]})  # refused before any policy is touched
            continue
        refused = False
        for pid, cols in parts.items():  # the reference: policies in batch order, up to the first refusal
            oracle, schema = refs.get(pid, (OracleReplay(capacity, alpha), None))
            rows = len(next(iter(cols.values()), []))
            if add_error(schema, cols, reserved) or (
                    pid in prios and priority_error(prios[pid], rows, 0.6, capacity)):
                refused = True
                break
            oracle.add({k: np.ascontiguousarray(v) for k, v in cols.items()}, prios.get(pid))
            refs[pid] = (oracle, schema or {k: (v.dtype, v.shape[1:]) for k, v in cols.items()})
        if refused:
            with pytest.raises((ValueError, TypeError)):
                multi.add(batch, prios or None)
        else:
            multi.add(batch, prios or None)
        for pid, (oracle, schema) in refs.items():
            assert len(multi[pid]) == oracle.size
            stored = multi[pid].stored()
            for name, column in oracle.stored().items():
                assert same_bytes(stored[name], column), (pid, name)
            if prioritized:
                np.testing.assert_allclose(multi[pid].leaf_values(), oracle.leaves[: oracle.size], rtol=1e-12)
    with pytest.raises(ValueError, match="no replay buffer for policy 'ghost'"):
        multi.sample("ghost", 1)


# ----------------------------------------------------------------------- construction
@FUZZ
@given(capacity=st.one_of(st.integers(-(2**64), 2**65), st.sampled_from([0, 1, 2**40, 2**40 + 1, 2**63, 2**64]),
                          st.floats(allow_nan=True), st.none(), st.text(max_size=3)),
       alpha=st.one_of(ALPHAS, st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.text(max_size=2)),
       seed=st.one_of(st.integers(-(2**65), 2**65), st.none(), st.floats()))
def test_constructor_arguments_are_checked(capacity: object, alpha: object, seed: object) -> None:
    try:
        buf = PrioritizedReplayBuffer(capacity, alpha=alpha, seed=seed)  # type: ignore[arg-type]
    except (TypeError, ValueError) as err:
        assert str(err)
        return
    assert isinstance(capacity, int) and 1 <= capacity <= 2**40
    assert isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 <= alpha < math.inf
    assert buf.capacity == capacity and len(buf) == 0


# ----------------------------------------------------------------------- saved files
META_VALUES = [None, True, -1, 0, 1, 3, 5, 6, 2**40, 2**40 + 1, 2**63, 2**64, -(2**63), 1.5, math.nan, math.inf,
               "6", [], [0, 0, 0, 0], [1, 2, 3], [-1, 0, 0, 0], [2**64, 0, 0, 0], {}, ["obs"], ["obs", "obs"]]


def tamper(path: Path, kind: str, key: str, value: object, drop_array: str | None = None) -> None:
    """Save a 5-row buffer of ``kind`` to ``path`` with ``meta[key] = value`` (and an array dropped)."""
    buf = ReplayBuffer(6, seed=1) if kind == "uniform" else PrioritizedReplayBuffer(6, alpha=0.5, seed=1)
    buf.add({"obs": np.arange(10, dtype=np.float32).reshape(5, 2)})
    buf.save(path)
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays.pop("meta").tobytes())
    meta[key] = value
    arrays.pop(drop_array, None)
    np.savez(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)


@FUZZ
@given(kind=st.sampled_from(["uniform", "prioritized"]), key=st.sampled_from(
    ["format", "version", "kind", "capacity", "alpha", "size", "next", "rng", "max_priority", "columns"]),
    value=st.sampled_from(META_VALUES), drop_array=st.sampled_from([None, "column_0", "leaf_values"]))
def test_tampered_replay_files_load_consistently_or_are_refused(
    tmp_path_factory: pytest.TempPathFactory, kind: str, key: str, value: object, drop_array: str | None
) -> None:
    path = tmp_path_factory.mktemp("tamper") / "buf.npz"
    tamper(path, kind, key, value, drop_array)
    try:
        loaded = ReplayBuffer.load(path)
    except ReplayFileError as err:
        assert str(path) in str(err)
        return
    assert len(loaded) <= loaded.capacity
    if len(loaded):
        out = loaded.sample(4) if kind == "uniform" else loaded.sample(4, beta=0.5)
        assert ((out["batch_indexes"] >= 0) & (out["batch_indexes"] < len(loaded))).all()
    loaded.add({"obs": np.ones((3, 2), np.float32)})


@pytest.mark.parametrize(("key", "value"), [("capacity", math.inf), ("size", math.inf), ("next", math.inf),
                                            ("capacity", 2**40)])
def test_tampered_files_with_infinite_or_huge_numbers_are_refused(tmp_path: Path, key: str, value: object) -> None:
    """Found by the fuzz test above: OverflowError and MemoryError used to escape."""
    tamper(tmp_path / "buf.npz", "prioritized", key, value)
    with pytest.raises(ReplayFileError):
        ReplayBuffer.load(tmp_path / "buf.npz")
