"""Every shipped env file, experiment file and README example through ``league-train`` (issue 38).

Each entry is run as a user runs it: ``python -m league.cli.train <overrides>
stop.time_s=<budget> logging=quiet`` in a subprocess (Ray, samplers and evaluation as
configured), with ``<budget>`` the file's documented ``stop.time_s`` capped at ``--budget-s``
so that the whole matrix is feasible. Beside it, in this process just before, the same env
(the composed config's ``env.name`` and ``env.kwargs``) is stepped by uniformly random legal
actions in one process for ``--raw-s`` seconds: the raw single-process env speed the run is
judged against. One JSON line per entry:

* ``exit_code``, ``wall_s`` (process start to exit) and ``overrun_s`` (``wall_s`` past the budget);
* ``env_steps_per_s`` (the run's summary: env steps over the whole run, start-up included),
  ``raw_env_steps_per_s`` (before the run) and ``raw_after_env_steps_per_s`` (after it), and
  ``vs_raw``: the run's speed over the faster of those two readings; ``running_env_steps_per_s`` and
  ``running_vs_raw``: the same from the run's first metrics row to its last (start-up excluded:
  Ray, the sampler actors and their env copies, and the first iteration's sampling);
* ``eval_env_steps``: env steps of the finished evaluation games (the samplers play them
  besides training), and ``stepped_vs_raw``: training and evaluation env steps together over
  the whole run, against the raw speed (how fast the samplers step the env, whatever for);
* ``training_episodes`` (finished training episodes) and ``evaluations`` (rounds with a figure);
* ``headline``: the run's final headline (metric, game shape, opponent, value, best, per side);
* ``first_quarter`` / ``last_quarter``: the mean headline value (and each side's) over the first
  and the last quarter of the run's evaluations (each counted once: a new one where a round
  played games, ``eval_env_steps``, or the figures changed; the rows between repeat it), and
  ``improved``: last above first (below, for a headline whose ``mode`` is ``min``: the poker
  presets' exploitability); ``improvement_z``: that change over its standard error (the two quarters' spread of evaluations; None with fewer
  than two evaluations a quarter or no spread): below 2, the change is within an evaluation's
  noise (pong's -13.09 -> -13.08 is "improved");
* ``random_play``: the headline's figure for uniformly random play (each side's, their mean and
  its standard error; from the raw-speed games, played on until 20 have finished or 60 s), for a
  headline against random players or teammates: where the run's policies would stand having
  learned nothing. ``z_vs_random_play``: the last quarter above it over the standard error of
  the difference; it sees learning done before the first quarter ends (MPE's goal-seekers, a
  CartPole that is at 500 by then), which ``improvement_z`` cannot;
* ``warnings``: the run's UserWarning lines (what the config check changed), shortened.

Usage::

    python benchmarks/bench_envs_matrix.py --list
    python benchmarks/bench_envs_matrix.py --budget-s 120                   # everything (~1.5 h)
    python benchmarks/bench_envs_matrix.py --only env:pistonball experiment:multiwalker_ppo
    python benchmarks/bench_envs_matrix.py --rescore rows.jsonl    # add random play's figure to old rows

Speeds depend on what else the machine runs (``load_avg_1m`` is printed); compare a run only
with the raw speed measured beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

#: The README's examples ("Any environment", "Sides and teams", "Images"), as league-train's argv.
README_EXAMPLES: dict[str, list[str]] = {
    "readme:texas_holdem_3p": ["env.name=pettingzoo.classic.texas_holdem_v4", "+env.kwargs.num_players=3"],
    "readme:openspiel_liars_dice": ["env.name=openspiel:liars_dice"],
    "readme:acrobot_return_stop": ["env.name=gymnasium:Acrobot-v1", "+stop.return_mean=-100"],
    "readme:simple_tag_ppo_vs_dqn": [
        "env=simple_tag", "+policies={hunters: {algo: ppo, group: predator}, prey: {algo: dqn, group: prey}}",
    ],
    "readme:simple_spread_by_name": [
        "env.name=mpe2.simple_spread_v3", "+env.groups={team: [\"*\"]}", "algo.params.separate_networks=true", "algo.params.normalize_values=true",
    ],
    "readme:texas_holdem_no_random": ["env=texas_holdem", "league.fixed_opponents.random=0"],
    "readme:tictactoe": ["env=tictactoe"],
}


def entries() -> dict[str, list[str]]:
    """Every entry: each file of configs/env/ (but ``plain``, the empty base) as ``env=<file>``,
    each of configs/experiment/ as ``+experiment=<file>``, then the README's examples."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "configs" / "env").glob("*.yaml")):
        if path.stem != "plain":
            found[f"env:{path.stem}"] = [f"env={path.stem}"]
    for path in sorted((ROOT / "configs" / "experiment").glob("*.yaml")):
        found[f"experiment:{path.stem}"] = [f"+experiment={path.stem}"]
    found.update(README_EXAMPLES)
    return found


def actions_of(players: dict[str, Any], specs: dict[str, Any], ts: Any) -> dict[str, Any]:
    """Each acting agent's action in ``ts`` from its player (an int for a Discrete space)."""
    actions: dict[str, Any] = {}
    for agent, obs in ts.obs.items():
        action = players[agent].compute_actions(obs[None], ts.masks[agent][None])["actions"][0]
        actions[agent] = action if specs[agent].continuous or specs[agent].action_nvec is not None else int(action)
    return actions


def random_play(
    name: str, kwargs: dict[str, Any], seconds: float, episodes: int = 20, cap_s: float = 60.0
) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
    """Env ``name`` stepped by uniformly random legal actions in this process: its env steps a
    second over the first ``seconds`` (the raw single-process env speed), and the finished
    episodes' records (:func:`~league.sampling.batched_runner.episode_record`: each agent's
    return and outcome), play going on past ``seconds`` until ``episodes`` have finished or
    ``cap_s`` has passed: what uniformly random play scores, the baseline a run improves on;
    and each agent's spec."""
    from league.envs import make_env
    from league.policy import RandomPolicy
    from league.sampling.batched_runner import episode_record

    env = make_env(name, **kwargs)
    try:
        specs = {a: env.spec(a) for a in env.possible_agents}
        players = {
            a: RandomPolicy(seed=i, action_bounds=(s.action_low, s.action_high) if s.continuous else None, action_nvec=s.action_nvec)
            for i, (a, s) in enumerate(specs.items())
        }
        ts, steps, t0 = env.reset(seed=0), 0, time.perf_counter()
        speed: float | None = None
        finished: list[dict[str, Any]] = []
        returns, length = dict.fromkeys(specs, 0.0), 0
        while True:
            elapsed = time.perf_counter() - t0
            if speed is None and elapsed >= seconds:
                speed = steps / elapsed
            if speed is not None and (len(finished) >= episodes or elapsed >= cap_s):
                return speed, finished, specs
            ts = env.step(actions_of(players, specs, ts))
            steps, length = steps + 1, length + 1
            for agent, reward in ts.rewards.items():
                returns[agent] += float(reward)
            if ts.done:
                finished.append(episode_record(len(finished), length, returns, {}))
                ts, returns, length = env.reset(), dict.fromkeys(specs, 0.0), 0
    finally:
        env.close()


#: The seat random play takes in games against a scripted yardstick (:func:`yardstick_play`).
LEARNER = "random play"


def yardstick_play(
    values: dict[str, Any], opponent: str, seconds: float = 8.0, episodes: int = 20, cap_s: float = 60.0
) -> list[dict[str, Any]]:
    """Games of a uniformly random player against scripted ``opponent`` (a registered player or
    mix, ``league.negamax_depth`` deep, as a run's yardstick is built), the random player's seat
    going round the env's agents and each other seat played by a member of the mix drawn per
    game: the baseline of a headline measured against that yardstick. Each record's
    ``policies`` marks the random player's seat :data:`LEARNER`. Games go on for ``seconds``
    and until ``episodes`` have finished (poker's chips need thousands of hands), at most ``cap_s``."""
    from league.envs import make_env
    from league.population.scripted import scripted_factory, scripted_members
    from league.sampling.batched_runner import episode_record

    env = make_env(values["env"]["name"], **dict(values["env"]["kwargs"] or {}))
    rng, depth, members = np.random.default_rng(0), int(values["league"]["negamax_depth"]), scripted_members(opponent)
    try:
        specs = {a: env.spec(a) for a in env.possible_agents}
        factories = {(a, m): scripted_factory(m, spec, depth) for a, spec in specs.items() for m in ("random", *members)}
        finished: list[dict[str, Any]] = []
        t0 = time.perf_counter()
        while (len(finished) < episodes or time.perf_counter() - t0 < seconds) and time.perf_counter() - t0 < cap_s:
            seat = env.possible_agents[len(finished) % len(specs)]
            players = {
                a: factories[a, "random" if a == seat else str(rng.choice(members))].make_policy(seed=int(rng.integers(1 << 30)))
                for a in specs
            }
            ts, returns, length = env.reset(seed=len(finished)), dict.fromkeys(specs, 0.0), 0
            while not ts.done:
                ts, length = env.step(actions_of(players, specs, ts)), length + 1
                for agent, reward in ts.rewards.items():
                    returns[agent] += float(reward)
            policies = {a: LEARNER if a == seat else opponent for a in specs}
            finished.append(episode_record(len(finished), length, returns, policies))
        return finished
    finally:
        env.close()


def side_agents(side: str, values: dict[str, Any], agents: dict[str, Any]) -> list[str] | None:
    """The agents a headline's side plays: its group's (``env.groups``, the groups proposed for
    agents that differ, or a ``policies`` entry's ``group``), None for the one symmetric side
    (``main``: one seat of any)."""
    from league.envs.groups import auto_groups, resolve_groups

    declared = values["env"].get("groups") or {}
    groups = resolve_groups(declared, agents) if declared else auto_groups(agents) or {}
    group = side if side in groups else ((values.get("policies") or {}).get(side) or {}).get("group")
    return groups.get(group) if group else None


def _as_side(side: str, seats: list[str] | None, agents: dict[str, Any], played: list[dict[str, Any]],
             against_yardstick: bool) -> list[dict[str, Any]]:  # fmt: skip
    """``played`` with ``side`` as the policy in the seats a run's headline gives it: the random
    player's (:data:`LEARNER`) in games against a yardstick, its group's, or each seat in turn
    (one record per seat) for the one symmetric side; records without such a seat dropped."""
    if against_yardstick:
        relabelled = [{**e, "policies": {a: side if p == LEARNER else p for a, p in e["policies"].items()}} for e in played]
    elif seats:
        relabelled = [{**e, "policies": dict.fromkeys(seats, side)} for e in played]
    else:
        relabelled = [{**e, "policies": {a: side}} for e in played for a in agents]
    return [e for e in relabelled if side in e["policies"].values()]


def random_play_figure(headline: dict[str, Any] | None, values: dict[str, Any], agents: dict[str, Any],
                       played: list[dict[str, Any]]) -> dict[str, Any] | None:  # fmt: skip
    """The headline's figure for uniformly random play (each side's and their mean, with its
    standard error): what the run's greedy policies would score having learned nothing, for a
    ``return`` or ``win_rate`` headline, scored as the run scores its policies
    (:func:`~league.run.evaluation.returns_of`: a side's seats' mean return in each game;
    :func:`~league.run.evaluation.wins_of`). ``played``: games of random players only (a
    headline against random players or teammates), or :func:`yardstick_play`'s against the
    headline's scripted opponent (its one symmetric side only). None for an exact measure."""
    from league.run.evaluation import returns_of, wins_of

    if not headline or not played or headline.get("metric") not in ("return", "win_rate"):
        return None
    against_yardstick = headline.get("opponent") not in ("random", "teammates")
    sides: dict[str, float] = {}
    errors: list[float] = []
    for side in headline.get("sides") or {}:
        seats = side_agents(side, values, agents)
        if against_yardstick and seats is not None:
            return None  # a side of several seats against a scripted yardstick: not played here
        games = _as_side(side, seats, agents, played, against_yardstick)
        if not games:
            return None
        if headline["metric"] == "win_rate":
            value = wins_of(side, games)
            error = math.sqrt(value * (1 - value) / len(games))
        else:
            samples = returns_of(side, games)
            value = statistics.fmean(samples)
            error = statistics.stdev(samples) / math.sqrt(len(samples)) if len(samples) > 1 else 0.0
        sides[side] = round(value, 4)
        errors.append(error)
    if not sides:
        return None
    stderr = math.sqrt(sum(e * e for e in errors)) / len(errors)  # of the sides' mean
    return {"value": round(statistics.fmean(sides.values()), 4), "stderr": round(stderr, 4), "episodes": len(played), "sides": sides}


def baseline_games(
    headline: dict[str, Any] | None, values: dict[str, Any], random_games: list[dict[str, Any]], seconds: float
) -> list[dict[str, Any]]:
    """The games random play's figure is taken from: ``random_games`` (random players in every
    seat), or for a headline against a scripted yardstick, :func:`yardstick_play`'s (none where
    the yardstick cannot be built here), played for ``seconds`` at least."""
    opponent = (headline or {}).get("opponent")
    if opponent in (None, "random", "teammates"):
        return random_games
    try:
        return yardstick_play(values, str(opponent), seconds)
    except ValueError:  # not a scripted player this env's seats can be played by: no baseline
        return []


def z_vs_random_play(last: dict[str, Any] | None, baseline: dict[str, Any] | None) -> float | None:
    """The last quarter's mean headline above random play's, over the standard error of the
    difference (the quarter's evaluations' spread and random play's own); None where either is
    missing or the quarter has one evaluation."""
    if last is None or baseline is None or last.get("stdev") is None:
        return None
    se = math.sqrt(last["stdev"] ** 2 / last["evaluations"] + baseline["stderr"] ** 2)
    return round((last["value"] - baseline["value"]) / se, 2) if se else None


def evaluations(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's evaluations, each once: the headline of every row after an evaluation round
    played games (``eval_env_steps`` grew) or whose figures differ from the row before (a
    league's exact measure). A round that scores what the one before scored counts too: CartPole's
    500s and a deterministic yardstick's replayed games are evaluations, not repeats of a row."""
    seen: list[dict[str, Any]] = []
    played = None
    for row in rows:
        head = row.get("headline") or {}
        steps = row.get("eval_env_steps")
        new_round = steps is not None and steps != played
        played = steps if steps is not None else played
        if head.get("value") is None:
            continue
        key = {"value": head["value"], "sides": head.get("sides", {})}
        if not seen or seen[-1] != key or new_round:
            seen.append(key)
    return seen


def quarter(evals: list[dict[str, Any]], last: bool) -> dict[str, Any] | None:
    """The mean headline value and each side's over the first (or last) quarter of ``evals``."""
    if not evals:
        return None
    n = max(1, len(evals) // 4)
    part = evals[-n:] if last else evals[:n]
    sides: dict[str, list[float]] = {}
    for e in part:
        for side, value in (e["sides"] or {}).items():
            if isinstance(value, (int, float)):
                sides.setdefault(side, []).append(float(value))
    values = [float(e["value"]) for e in part]
    return {"value": round(statistics.fmean(values), 4), "evaluations": len(part),
            "stdev": round(statistics.stdev(values), 4) if len(values) > 1 else None,
            "sides": {s: round(statistics.fmean(v), 4) for s, v in sides.items()}}  # fmt: skip


def improvement_z(first: dict[str, Any] | None, last: dict[str, Any] | None, mode: str | None) -> float | None:
    """The change from the first quarter's mean headline to the last's, in the direction the
    headline improves (``mode`` ``min``: down), over its standard error (Welch's, from each
    quarter's spread of evaluations); None where a quarter has fewer than two evaluations or no spread."""
    if first is None or last is None or first.get("stdev") is None or last.get("stdev") is None:
        return None
    se = math.sqrt(first["stdev"] ** 2 / first["evaluations"] + last["stdev"] ** 2 / last["evaluations"])
    if se == 0:
        return None
    change = last["value"] - first["value"]
    return round((-change if mode == "min" else change) / se, 2)


def running_speed(rows: list[dict[str, Any]]) -> float | None:
    """Env steps per second between the first and the last metrics row (start-up excluded)."""
    if len(rows) < 2 or rows[-1]["time_s"] <= rows[0]["time_s"]:
        return None
    return (rows[-1]["env_steps"] - rows[0]["env_steps"]) / (rows[-1]["time_s"] - rows[0]["time_s"])


def raw_speed_after(values: dict[str, Any], raw_s: float) -> float | None:
    """The raw single-process env speed again, once the run has ended (None if the env fails now)."""
    try:
        speed, _, _ = random_play(values["env"]["name"], dict(values["env"]["kwargs"] or {}), raw_s, episodes=0)
    except Exception:  # noqa: BLE001 - the reading before the run already says what fails
        return None
    return round(speed, 1)


def run_entry(label: str, overrides: list[str], cap_s: float, raw_s: float, keep: Path | None = None) -> dict[str, Any]:
    """One entry: raw env speed, then ``league-train`` for its budget; returns its JSON line."""
    from league.cli.train import composed_values

    values = composed_values(overrides)
    documented = float(values["stop"]["time_s"] or 0.0)
    budget = min(documented, cap_s) if documented else cap_s
    row: dict[str, Any] = {"entry": label, "overrides": overrides, "documented_s": documented, "budget_s": budget}
    played: list[dict[str, Any]] = []
    agents: dict[str, Any] = {}
    try:
        speed, played, agents = random_play(values["env"]["name"], dict(values["env"]["kwargs"] or {}), raw_s)
        row["raw_env_steps_per_s"] = round(speed, 1)
    except Exception as err:  # noqa: BLE001 - the run below says what is wrong with the env
        row["raw_env_steps_per_s"], row["raw_error"] = None, f"{type(err).__name__}: {str(err)[:200]}"
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = keep / label.replace(":", "_") if keep else Path(tmp) / "run"
        argv = [sys.executable, "-m", "league.cli.train", *overrides, f"stop.time_s={budget:g}", "logging=quiet",
                f"hydra.run.dir={run_dir}"]  # fmt: skip
        t0 = time.perf_counter()
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=budget + 300, cwd=ROOT)
            code, stderr = out.returncode, out.stderr
        except subprocess.TimeoutExpired as err:
            code, stderr = None, (err.stderr or b"").decode() if isinstance(err.stderr, bytes) else (err.stderr or "")
        wall = time.perf_counter() - t0
        row.update(exit_code=code, wall_s=round(wall, 1), overrun_s=round(wall - budget, 1))
        summary_path, metrics_path = run_dir / "summary.json", run_dir / "metrics.jsonl"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        rows = [json.loads(line) for line in metrics_path.read_text().splitlines()] if metrics_path.exists() else []
    row["raw_after_env_steps_per_s"] = raw_speed_after(values, raw_s) if row["raw_env_steps_per_s"] else None
    row["warnings"] = sorted({m[:160] for m in re.findall(r"UserWarning: (.*)", stderr)})
    if code != 0:
        row["error"] = stderr.strip()[-600:]
    steps_s = summary.get("env_steps_per_s")
    # The machine's speed drifts over a run (1.6x between two raw readings an hour apart here):
    # the run is judged against the faster reading, before or after it.
    raw = max(row["raw_env_steps_per_s"] or 0.0, row["raw_after_env_steps_per_s"] or 0.0) or None
    running = running_speed(rows)
    evals = evaluations(rows)
    eval_steps = rows[-1].get("eval_env_steps") if rows else None
    first, last = quarter(evals, last=False), quarter(evals, last=True)
    row.update(
        env_steps=summary.get("env_steps"), env_steps_per_s=steps_s,
        vs_raw=round(steps_s / raw, 2) if steps_s and raw else None,
        running_env_steps_per_s=None if running is None else round(running, 1),
        running_vs_raw=round(running / raw, 2) if running and raw else None,
        eval_env_steps=eval_steps,
        stepped_vs_raw=round((summary["env_steps"] + eval_steps) / summary["wall_time_s"] / raw, 2)
        if raw and eval_steps is not None and summary.get("wall_time_s") else None,
        training_episodes=sum(int(r.get("episodes") or 0) for r in rows), evaluations=len(evals),
        headline=summary.get("headline"), first_quarter=first, last_quarter=last,
        improved=None if first is None or last is None or len(evals) < 2 else (
            last["value"] < first["value"] if (summary.get("headline") or {}).get("mode") == "min" else last["value"] > first["value"]),
        improvement_z=improvement_z(first, last, (summary.get("headline") or {}).get("mode")),
    )  # fmt: skip
    row["random_play"] = random_play_figure(summary.get("headline"), values, agents, baseline_games(summary.get("headline"), values, played, raw_s))
    row["z_vs_random_play"] = z_vs_random_play(last, row["random_play"])
    return row


def rescore(row: dict[str, Any], raw_s: float) -> dict[str, Any]:
    """``row`` (one entry's line, from an earlier run of this bench) with random play's figure
    (``random_play``, ``z_vs_random_play``) measured now from its overrides' env."""
    from league.cli.train import composed_values

    values = composed_values(row["overrides"])
    _, played, agents = random_play(values["env"]["name"], dict(values["env"]["kwargs"] or {}), raw_s)
    baseline = random_play_figure(row.get("headline"), values, agents, baseline_games(row.get("headline"), values, played, raw_s))
    return {**row, "random_play": baseline, "z_vs_random_play": z_vs_random_play(row.get("last_quarter"), baseline)}


def main() -> None:
    """Run the matrix (see the module docstring)."""
    known = entries()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-s", type=float, default=120.0, help="cap on each entry's stop.time_s (its file's, else this)")
    parser.add_argument("--raw-s", type=float, default=8.0, help="seconds of random play per entry (the raw env speed)")
    parser.add_argument("--only", nargs="*", default=None, help=f"entries to run (default: all); known: {', '.join(known)}")
    parser.add_argument("--extra", nargs="*", default=[], help="overrides added to every entry (an A/B of a setting)")
    parser.add_argument("--runs-dir", type=Path, default=None, help="keep each run's directory here (default: deleted)")
    parser.add_argument("--list", action="store_true", help="print the entries and their overrides, run nothing")
    parser.add_argument("--rescore", type=Path, default=None,
                        help="a JSONL file of this bench's rows: add random play's figure to each (random_play, z_vs_random_play), train nothing")
    args = parser.parse_args()
    if args.rescore is not None:
        for number, line in enumerate(args.rescore.read_text().splitlines(), 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                parser.error(f"--rescore {args.rescore}: line {number} is not JSON ({err.msg}); give the lines this bench printed")
            if not isinstance(row, dict) or not isinstance(row.get("overrides"), list):
                parser.error(f"--rescore {args.rescore}: line {number} has no 'overrides' list; give the lines this bench printed")
            print(json.dumps(rescore(row, args.raw_s)), flush=True)
        return
    unknown = sorted(set(args.only or ()) - set(known))
    if unknown:
        parser.error(f"unknown entries {unknown}; known: {', '.join(known)}")
    chosen = {k: v for k, v in known.items() if args.only is None or k in args.only}
    if args.list:
        for label, overrides in chosen.items():
            print(json.dumps({"entry": label, "overrides": overrides}))
        return
    for label, overrides in chosen.items():
        row = run_entry(label, [*overrides, *args.extra], args.budget_s, args.raw_s, args.runs_dir)
        row.update(cores=os.cpu_count(), load_avg_1m=round(os.getloadavg()[0], 2), niceness=os.nice(0))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
