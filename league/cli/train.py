"""``league-train``: the Hydra entry point for training runs and sweeps.

``league-train`` runs the default self-play league; any key can be overridden
(``league-train algo.params.lr=1e-3 sampler.num_samplers=1``), and ``-m`` sweeps
(``league-train -m algo.params.lr=1e-3,3e-4 seed=0,1``) reuse one Ray instance across jobs.
The config is validated (unknown keys, env, algorithm) before Ray starts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from league.config import parse_run_config

__all__ = ["main", "config_dir"]


def config_dir() -> str:
    """The ``configs/`` folder: the source checkout's, else the copy installed in the package."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / "configs", here.parents[1] / "configs"):
        if (candidate / "config.yaml").is_file():
            return str(candidate)
    raise FileNotFoundError(f"league configs not found next to {here}")


@hydra.main(config_path=config_dir(), config_name="config", version_base="1.3")
def _train(cfg: DictConfig) -> float | None:
    from league.trainer import Trainer

    values = OmegaConf.to_container(cfg, resolve=True)
    try:
        run_cfg = parse_run_config(values)  # before Ray starts
    except ValueError as err:
        print(f"league-train: invalid config: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    trainer = Trainer(run_cfg, HydraConfig.get().runtime.output_dir)
    try:
        summary = trainer.train()
    finally:
        trainer.close()
    print(
        f"league-train: done in {summary['wall_time_s']} s, {summary['env_steps']} env steps "
        f"({summary['env_steps_per_s']} steps/s), win rate vs random {summary['final_win_rate_vs_random']}"
    )
    return summary["final_win_rate_vs_random"]  # the value sweepers optimise


def main() -> None:
    """Console-script entry point."""
    _train()


if __name__ == "__main__":
    main()
