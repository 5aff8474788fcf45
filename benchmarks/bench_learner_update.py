"""The default job's PPO update as ``league-train`` runs it, against the update before issue 36
and against the variants tried for it.

The policy is built as ``league-train`` builds it: the config composed from ``configs/`` with
the game's preset (``league.cli.train.composed_values``), validated into a ``RunConfig``, its
algorithm from ``run/build.make_algorithms`` and its learner thread count from
``run/build.update_threads`` (connect four: the mirrored 4x4 conv reading the threat planes,
the distilled depth-4 search, two epochs of 512-row minibatches, two threads). The batches
are real boards: positions of uniformly random connect-four games with their legal moves
(``bench_learner.connect_four_batch``), one iteration's rows (``--rows``, plus 13 more per
round, so the last minibatch's shape changes as in a run).

Variants (each its own learner, same seed, same batches, timed interleaved in rotating order
over ``--repeats`` rounds after a warm-up round; the median reported, mean and min beside it):

* ``now``: the update as the code runs it;
* ``before``: the update before issue 36, the baseline: the conv fed a contiguous
  channels-first copy of the board (:func:`league.algos.models.channels_first`, then
  ``fc(convs(x))``), the mirror's copies by advanced indexing, fp32 products in MKL;
* ``before`` has four epochs over each batch, as the preset had before issue 36;
* ``channels_last``, ``index_select``, ``onednn``: issue 36's steps up to that one (:data:`STEPS`:
  the conv trunk channels-last end to end, :func:`league.algos.models.conv_trunk`; the copies
  by ``index_select``; the products in oneDNN, :mod:`league.learn.onednn`), all at four epochs;
  then ``now`` adds the preset's two epochs (2026-11-29: the job makes more env steps of it and
  is as strong, benchmarks/results/strength_history.md);
* ``compile``: ``now`` with PPO's loss (model forward included) under ``torch.compile``
  (inductor), not adopted; its first call's extra time is reported (``compile_s``);
* ``bf16``: ``now`` under ``learner.precision=bf16`` (autocast), not the default.

One JSON object per variant (``update_ms``, ``speedup``: ``before``'s median over its own) and one with the
phases of ``now``'s update (``--phases``: tensors, auxiliary targets, input features,
minibatch indexing, forward and loss, backward, clipping, Adam)::

    python benchmarks/bench_learner_update.py
    python benchmarks/bench_learner_update.py --variants now,before --repeats 20
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import statistics
import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

import torch
from torch import nn

from bench_learner import connect_four_batch
from league.algos import models
from league.algos.models import input_features
from league.algos.ppo import AUX_TARGETS, PPO, PPO_INPUTS
from league.algos.sgd import minibatch_bounds
from league.algos.symmetry import SymmetrizedModel
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.cli.train import composed_values
from league.config import parse_run_config
from league.learn import Learner
from league.learn.algorithm import batch_to_tensors
from league.run.build import agent_spec, make_algorithms, update_threads

VARIANTS = ("now", "before", "channels_last", "index_select", "onednn", "compile", "bf16")
#: Issue 36's changes in the order they were made: a variant named after one runs the update
#: with it and the ones before it only (``now`` has them all, ``before`` none).
STEPS = ("channels_last", "index_select", "onednn", "two_epochs")
#: Epochs over each batch without the ``two_epochs`` step (the preset's before 2026-11-29).
FOUR_EPOCHS = ["algo.params.num_epochs=4"]


def before_body(self: models.ConvModel, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``ConvModel.body`` before issue 36: a contiguous channels-first copy, then ``fc(convs(x))``."""
    x = models.channels_first(obs)
    z = self.fc(self.convs(x))
    zv = z if self.vf_convs is None or self.vf_fc is None else self.vf_fc(self.vf_convs(x))
    return self.pi(z), self.vf(zv).squeeze(-1)


def kept_steps(variant: str) -> tuple[str, ...]:
    """Issue 36's steps (:data:`STEPS`) that ``variant`` runs with."""
    return STEPS[: STEPS.index(variant) + 1] if variant in STEPS else () if variant == "before" else STEPS


def build(overrides: list[str], variant: str) -> tuple[Learner, PPO, int]:
    """The learner and PPO algorithm ``league-train <overrides>`` builds, for ``variant``; and its threads."""
    epochs = [] if "two_epochs" in kept_steps(variant) else FOUR_EPOCHS
    cfg = parse_run_config(composed_values([*epochs, *overrides]))
    spec, learning = agent_spec(cfg)
    algorithms = make_algorithms(cfg, spec, learning[:1])
    (pid, algo), = algorithms.items()
    if not isinstance(algo, PPO):
        raise SystemExit(f"the default job's policy is PPO; {overrides} built {type(algo).__name__}")
    threads = update_threads(cfg, algorithms)[pid]
    learner = Learner("cpu", seed=cfg.seed, precision="bf16" if variant == "bf16" else cfg.learner.precision)
    learner.add_policy("main", algo, num_threads=threads)
    return learner, algo, threads


def before_forward(self: SymmetrizedModel, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``SymmetrizedModel.forward`` before issue 36: the copies by advanced indexing."""
    batch = obs.shape[0]
    groups, size = self.obs_src.shape
    copies = obs.reshape(batch, size)[:, self.obs_src]  # [B, G, D]
    index = self.action_map.unsqueeze(0).expand(batch, groups, -1)  # [B, G, A]
    logits, value = self.base(copies.reshape(batch * groups, *self.obs_shape))
    logits = torch.gather(logits.reshape(batch, groups, -1), 2, index).mean(dim=1)
    return logits, value.reshape(batch, groups).mean(dim=1)


@contextlib.contextmanager
def running(variant: str, algo: PPO, compiled: dict[str, Any]) -> Iterator[None]:
    """The patches ``variant`` runs under: issue 36's later steps undone (:data:`STEPS`), or
    the update compiled."""
    kept = kept_steps(variant)
    with contextlib.ExitStack() as stack:
        if "channels_last" not in kept:
            stack.enter_context(mock.patch.object(models.ConvModel, "body", before_body))
        if "index_select" not in kept:
            stack.enter_context(mock.patch.object(SymmetrizedModel, "forward", before_forward))
        if "onednn" not in kept:
            stack.enter_context(mock.patch("league.learn.learner.fp32_matmuls", contextlib.nullcontext))
        if variant == "compile":
            if "loss" not in compiled:
                compiled["loss"] = torch.compile(algo.loss)
            stack.enter_context(mock.patch.object(algo, "loss", compiled["loss"]))
        yield


def phases(learner: Learner, algo: PPO, batch: SampleBatch, totals: dict[str, float]) -> None:
    """``PPO.learn``'s steps (without lr annealing or the stats), each step's time added to ``totals``."""
    state = learner._policies["main"]
    cfg = algo.config
    clock = [time.perf_counter()]

    def tick(name: str) -> None:
        now = time.perf_counter()
        totals[name] += now - clock[0]
        clock[0] = now

    t = batch_to_tensors(batch, algo.loss_inputs(*PPO_INPUTS), torch.device("cpu"))
    algo.prepare(state.model, t)
    tick("tensors")
    if algo.aux is not None:
        t[AUX_TARGETS] = algo.aux.targets(t[C.OBS], t[C.ACTION_MASK])
    tick("aux_targets")
    t[C.OBS] = input_features(state.model, t[C.OBS])
    tick("input_features")
    model, optimizer, rows = state.model, state.trainable_optimizer, len(batch)
    model.train()
    for _ in range(cfg.num_epochs):
        order = torch.from_numpy(state.rng.permutation(rows))
        for start, stop in minibatch_bounds(rows, cfg.minibatch_size):
            mb = {k: v[order[start:stop]] for k, v in t.items()}
            tick("index")
            loss, _ = algo.loss(model, mb)
            tick("forward_loss")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            tick("backward")
            nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            tick("clip")
            optimizer.step()
            tick("adam")
    model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4868, help="rows per update (one default-job iteration's)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {', '.join(VARIANTS)}")
    parser.add_argument("--phases", action="store_true", help="also time the phases of now's update")
    parser.add_argument("override", nargs="*", help="league-train overrides (key=value)")
    args = parser.parse_args()
    variants = args.variants.split(",")
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    sizes = [args.rows + 13 * i for i in range(args.repeats + 1)]
    batches = [connect_four_batch(rows, i) for i, rows in enumerate(sizes)]
    built = {v: build(args.override, v) for v in variants}
    compiled: dict[str, Any] = {}
    times: dict[str, list[float]] = {v: [] for v in variants}
    first: dict[str, float] = {}
    common: dict[str, Any] = {"rows": args.rows, "repeats": args.repeats, "overrides": args.override}
    for repeat, rows in enumerate(batches):
        batch = MultiAgentBatch({"main": rows}, len(rows))
        for variant in variants[repeat % len(variants):] + variants[: repeat % len(variants)]:
            learner, algo, _ = built[variant]
            with running(variant, algo, compiled):
                start = time.perf_counter()
                learner.learn_on_batch(batch)
                elapsed = time.perf_counter() - start
            if repeat:  # the first round warms up allocator, oneDNN kernels and the compiler
                times[variant].append(elapsed)
            else:
                first[variant] = elapsed
    # The median: on a shared machine one round can take several times as long (another
    # process's threads preempt one of ours and the other waits for it); every round builds
    # kernels for its new last-minibatch shape, so the median still pays for those.
    ms = {v: statistics.median(t) * 1000 for v, t in times.items()}
    for variant in variants:
        row: dict[str, Any] = {"bench": "learner_update", "figure": "update_ms", "variant": variant, **common,
                               "threads": built[variant][2], "num_epochs": built[variant][1].config.num_epochs,
                               "update_ms": round(ms[variant], 1),
                               "mean_ms": round(statistics.fmean(times[variant]) * 1000, 1),
                               "min_ms": round(min(times[variant]) * 1000, 1)}
        if "before" in ms:
            row["speedup"] = round(ms["before"] / ms[variant], 2)
        if variant == "compile":
            # its first call compiles: that call's time over a warm-up update's ("now"'s first)
            row["compile_s"] = round(first[variant] - first.get("now", 0.0), 1)
        print(json.dumps({**row, "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)
    if args.phases:
        learner, algo, threads = build(args.override, "now")
        totals: dict[str, float] = collections.defaultdict(float)
        with _threads(threads), learner._autocast():  # the update's precision, as learn_on_batch runs it
            for repeat, rows in enumerate(batches):
                phases(learner, algo, rows, totals if repeat else collections.defaultdict(float))
        total = sum(totals.values())
        print(json.dumps({
            "bench": "learner_update", "figure": "phases_ms", "variant": "now", **common, "threads": threads,
            **{k: round(v / args.repeats * 1000, 1) for k, v in totals.items()}, "total_ms": round(total / args.repeats * 1000, 1),
            "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
        }), flush=True)  # fmt: skip


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


if __name__ == "__main__":
    main()
