"""benchmarks/bench_precision.py: the default job's update in fp32 and bf16, as the script runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_precision.py"


def test_both_precisions_are_timed_on_the_composed_default_job():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--rows", "600", "--repeats", "2"],
                         capture_output=True, text=True, check=True, timeout=300, cwd=_SCRIPT.parent).stdout
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["algo"] == "ppo" and row["rows"] == 600 and row["device"] == "cpu" and row["threads"] == 2  # the env file's learner.num_threads
    assert row["fp32"] > 0 and row["bf16"] > 0
    assert row["speedup_bf16"] == pytest.approx(row["fp32"] / row["bf16"], abs=0.02)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present here: --device cuda is not refused")
def test_device_cuda_is_refused_by_name_where_cuda_is_absent():
    run = subprocess.run([sys.executable, str(_SCRIPT), "--device", "cuda", "--rows", "64", "--repeats", "1"],
                         capture_output=True, text=True, timeout=300, cwd=_SCRIPT.parent)  # fmt: skip
    assert run.returncode == 2 and run.stdout == ""
    assert "--device cuda: CUDA is not available" in run.stderr


def test_an_unknown_device_is_refused_by_name():
    run = subprocess.run([sys.executable, str(_SCRIPT), "--device", "tpu"], capture_output=True, text=True, timeout=300, cwd=_SCRIPT.parent)
    assert run.returncode == 2 and "--device tpu: not a torch device" in run.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.is_available() is False)")
def test_both_precisions_are_timed_on_cuda():
    out = subprocess.run([sys.executable, str(_SCRIPT), "--device", "cuda", "--rows", "600", "--repeats", "2"],
                         capture_output=True, text=True, check=True, timeout=300, cwd=_SCRIPT.parent).stdout  # fmt: skip
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["device"] == "cuda" and row["device_name"] == torch.cuda.get_device_name(0)
    assert row["fp32"] > 0 and row["bf16"] > 0
