#!/usr/bin/env bash
# The checks that need CUDA, as one script for a machine that has a GPU but maybe not this
# project's installed environment (no network; Python packages it lacks can come as wheels).
#
#   bash scripts/gpu_check.sh [WHEEL_DIR]
#   LEAGUE_GPU_TESTS=0 LEAGUE_GPU_RUNS="mix8_gpu_steps8 ppo2_gpu" LEAGUE_GPU_SECONDS=45 bash scripts/gpu_check.sh [WHEEL_DIR]   # a subset
#
# 1. Builds league._core with CMake against the interpreter's pybind11 (no pip build) and
#    puts it beside the sources, so the tree runs from PYTHONPATH=. .
# 2. Installs the wheels in WHEEL_DIR (if given) into a scratch directory on PYTHONPATH:
#    the dependencies the machine lacks (Ray, gymnasium, pettingzoo, hydra, ...).
# 3. Runs the CUDA tests (tests/test_gpu.py and the learner tests' CUDA cases).
# 4. Trains with the learner on the GPU through league-train (Ray learner actors):
#    learner=gpu on the default connect-four job; the PPO+DQN mix at DQN's own replay
#    ratio 8 (one gradient step per learner call, then 8) and its PPO-only twin
#    (bench_composition's pair, on a learner device);
#    learner=shared_gpu (fractional GPU shares). Prints each run's last metrics row.
# Outputs go to $OUT when set (the device tool's folder), else to a temporary directory.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$(mktemp -d)}"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1

if [[ $# -ge 1 && -d "$1" ]]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/league-site "$1"/*.whl || exit 1
  export PYTHONPATH="/tmp/league-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'numpy', numpy.__version__)"

cmake -S . -B /tmp/league-build -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v "$PY")" \
  -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" >/tmp/league-cmake.log 2>&1 &&
  cmake --build /tmp/league-build -j "$(nproc)" >>/tmp/league-cmake.log 2>&1 || { tail -30 /tmp/league-cmake.log; exit 1; }
cp /tmp/league-cmake.log "$OUT/cmake.log"
cp /tmp/league-build/_core*.so league/

if [[ "${LEAGUE_GPU_TESTS:-1}" == 1 ]]; then
echo "== CUDA tests"
"$PY" -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_learner.py -k "cuda or gpu or GPU or device" 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
fi

run() {  # name, seconds, overrides... (LEAGUE_GPU_RUNS="name ...": only those)
  local name="$1" seconds="$2"; shift 2
  [[ -z "${LEAGUE_GPU_RUNS:-}" || " $LEAGUE_GPU_RUNS " == *" $name "* ]] || return 0
  seconds="${LEAGUE_GPU_SECONDS:-$seconds}"
  echo "== league-train $* (${seconds} s)"
  timeout $((seconds + 120)) "$PY" -m league.cli.train logging=quiet "stop.time_s=$seconds" \
    "hydra.run.dir=/tmp/league-runs/$name" "$@" >"/tmp/league-runs-$name.log" 2>&1
  echo "exit $?"; grep -v "logging.cc\|^ *@\|^PC:\|SIGTERM" "/tmp/league-runs-$name.log" | tail -4
  "$PY" - "/tmp/league-runs/$name/metrics.jsonl" <<'PYEOF'
import json, sys
try:
    rows = [json.loads(line) for line in open(sys.argv[1])]
except OSError:
    sys.exit("no metrics")
after = [r for r in rows if r["time_s"] >= 15] or rows
first, last = after[0], after[-1]
rate = (last["env_steps"] - first["env_steps"]) / max(last["time_s"] - first["time_s"], 1e-9)
updates = {k: v for k, v in last["counters"].items() if k.startswith("num_learner_updates/")}
print(json.dumps({"iterations": last["iteration"], "time_s": last["time_s"], "env_steps": last["env_steps"],
                  "env_steps_per_s_after_15s": round(rate), "updates": updates, "win_rate_vs_random": last.get("win_rate_vs_random")}))
PYEOF
}
mkdir -p /tmp/league-runs
{
run c4_gpu 60 learner=gpu
run mix8_gpu 60 learner=gpu policies=ppo_vs_dqn policies.dqn_0.params.training_intensity=8
run mix8_gpu_steps8 60 learner=gpu policies=ppo_vs_dqn policies.dqn_0.params.training_intensity=8 +policies.dqn_0.params.steps_per_call=8
run ppo2_gpu 60 learner=gpu policies=ppo_vs_ppo
run mix_shared 45 learner=shared_gpu policies=ppo_vs_dqn
} 2>&1 | tee "$OUT/runs.log"
