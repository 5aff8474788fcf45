"""``league-train``: the Hydra entry point for training runs and sweeps.

``league-train`` runs the default self-play league; any key can be overridden
(``league-train algo.params.lr=1e-3 sampler.num_samplers=1``), and ``-m`` sweeps
(``league-train -m algo.params.lr=1e-3,3e-4 seed=0,1``) run their jobs one after the
other in one process, reusing one Ray instance (each job's actors are killed when it
ends). ``league-train resume=<checkpoint or run dir> [overrides]`` continues a run in a
new run directory, with the checkpoint's own config but for the keys the command line sets.
The config and a resume checkpoint are validated before Ray starts; a config with no stop
criterion is refused (it would train until killed).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf

from league.checkpoint import CheckpointError
from league.config import config_dict, parse_run_config
from league.presets import apply_preset
from league.resume import resume_config
from league.run.stops import require_stop

__all__ = ["main", "config_dir", "composed_values", "overridden_keys", "override_paths", "process_age_s", "run_job"]


def config_dir() -> str:
    """The ``configs/`` folder: the source checkout's, else the copy installed in the package."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / "configs", here.parents[1] / "configs"):
        if (candidate / "config.yaml").is_file():
            return str(candidate)
    raise FileNotFoundError(f"league configs not found next to {here}")


def composed_values(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config dict that ``league-train <overrides>`` composes from ``configs/``,
    its preset applied under the overrides (not yet validated: :func:`~league.config.parse_run_config` does that);
    with ``resume=``, the checkpoint's config with the overridden keys (:func:`~league.resume.resume_config`)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        values = config_dict(OmegaConf.to_container(compose(config_name="config", overrides=list(overrides)), resolve=True))
    return resume_config(apply_preset(values, overridden_keys(overrides)), override_paths(overrides))


def overridden_keys(overrides: Sequence[str]) -> set[str]:
    """The dotted config keys (or config groups: ``algo``) that command-line ``overrides`` set.
    Choosing the env file (``env=tictactoe``) chooses the game, not its settings: the game's
    preset still applies."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return {o.key_or_group for o in OverridesParser.create().parse_overrides(list(overrides))} - {"env"}


def override_paths(overrides: Sequence[str]) -> set[str]:
    """Every dotted key or config group that command-line ``overrides`` set, the env file
    included: what a resumed run takes from the command line over its checkpoint's config."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return {o.key_or_group for o in OverridesParser.create().parse_overrides(list(overrides))}


#: Jobs this process has run: the first one's time budget counts from the process start
#: (imports, the config check), a sweep's later ones from their own start.
_jobs_run = 0


def process_age_s() -> float:
    """Seconds since this process started (Linux's /proc), 0 where that is unknown."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def run_job(values: dict[str, Any], output_dir: str, since: float | None = None) -> dict[str, Any]:
    """One training job from a resolved config dict, into ``output_dir``; returns its summary.
    ``since``: the ``time.perf_counter()`` its time budget counts from (default: when training starts).

    A bad config or resume checkpoint exits with status 2 and a message on stderr, before
    Ray starts and before anything is written.
    """
    from league.runtime.ray_start import RayResourcesError
    from league.trainer import Trainer

    try:
        run_cfg = parse_run_config(values)  # before Ray starts
        require_stop(run_cfg.stop)  # the Python API may pass its budget to train(); a CLI run has only these
    except ValueError as err:
        print(f"league-train: invalid config: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    if run_cfg.resume:  # absolute before it reaches anything that may run elsewhere
        run_cfg.resume = to_absolute_path(run_cfg.resume)
    trainer = Trainer(run_cfg, output_dir)
    try:
        summary = trainer.train(since=since)
    except CheckpointError as err:
        print(f"league-train: cannot resume: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except RayResourcesError as err:
        print(f"league-train: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        trainer.close()
    from league.run.headline import final_figure

    # The headline that fits the game (league.run.headline): a win rate, a return or a metric key.
    figure = final_figure(summary, trainer.history)
    print(
        f"league-train: done in {summary['wall_time_s']} s, {summary['iterations']} iterations, {summary['env_steps']} env steps "
        f"({summary['env_steps_per_s']} steps/s), {figure}; "
        f"checkpoint {summary['checkpoints'][-1] if summary['checkpoints'] else '-'}"
    )
    return summary


@hydra.main(config_path=config_dir(), config_name="config", version_base="1.3")
def _train(cfg: DictConfig) -> float | None:
    overrides = HydraConfig.get().overrides.task
    values = apply_preset(config_dict(OmegaConf.to_container(cfg, resolve=True)), overridden_keys(overrides))
    try:
        values = resume_config(values, override_paths(overrides))  # resume=: the checkpoint's own config
    except CheckpointError as err:
        print(f"league-train: cannot resume: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    global _jobs_run
    since = time.perf_counter() - process_age_s() if _jobs_run == 0 else None  # stop.time_s: the process's time
    _jobs_run += 1
    summary = run_job(values, HydraConfig.get().runtime.output_dir, since)
    return summary["final_metric"]  # the value sweepers optimise: win rate, mean return or a metric key (eval.metric)


def main() -> None:
    """Console-script entry point."""
    # A user's env module in the current directory (env.name=mygame) imports as it would
    # under `python -m`: console scripts do not put the working directory on sys.path.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    _train()


if __name__ == "__main__":
    main()
