"""league/sampling/row_store.py: gathering a fragment's rows from its blocks."""

import numpy as np

from league.sampling.row_store import _gather_rows


def test_gather_rows_matches_concatenating_then_indexing():
    rng = np.random.default_rng(0)
    blocks, start = [], 0
    for n in (3, 1, 5, 2):
        cols = {"obs": rng.standard_normal((n, 4, 4, 2)).astype(np.float32), "actions": rng.integers(0, 9, n)}
        blocks.append((start, cols))
        start += n
    rows = rng.permutation(start)[:7]
    got = _gather_rows(blocks, rows)
    for k in ("obs", "actions"):
        want = np.concatenate([c[k] for _, c in blocks])[rows]
        assert got[k].dtype == want.dtype and got[k].shape == want.shape
        np.testing.assert_array_equal(got[k], want)
    empty = _gather_rows(blocks, np.zeros(0, dtype=np.int64))
    assert empty["obs"].shape == (0, 4, 4, 2)
