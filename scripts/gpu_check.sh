#!/usr/bin/env bash
# The checks that need CUDA, as one script for a machine that has a GPU but maybe not this
# project's installed environment (no network; Python packages it lacks can come as wheels).
#
#   bash scripts/gpu_check.sh [WHEEL_DIR]                             # build, CUDA tests, issue 36's figures
#   bash scripts/gpu_check.sh --dry-run                                # the same steps on CPU, tiny sizes (no GPU needed)
#   LEAGUE_GPU_BENCH=1 LEAGUE_GPU_RUNS="c4_gpu mix_shared" bash scripts/gpu_check.sh [WHEEL_DIR]   # older checks too
#
# Sized to fit 10 minutes (LEAGUE_GPU_DEADLINE_S, default 570: steps that would begin after it
# are skipped), so that it can be rerun within a 15-minute window of GPU time.
#
# 1. Builds league._core with CMake against the interpreter's pybind11 (no pip build) and
#    puts it beside the sources, so the tree runs from PYTHONPATH=. .
# 2. Installs the wheels in WHEEL_DIR (if given) into a scratch directory on PYTHONPATH:
#    the dependencies the machine lacks (Ray, gymnasium, pettingzoo, hydra, ...).
# 3. LEAGUE_GPU_TESTS=1 (default): the test files that reach CUDA (LEAGUE_GPU_TEST_FILES),
#    -m "not slow". Where CUDA is present the tests that stand in for it on CPU skip, and the
#    gpu-marked ones run.
# 4. Issue 36's figures (LEAGUE_GPU_FIGURES=1, default), one JSON line each in figures.jsonl,
#    each run's baseline in the same call (LEAGUE_GPU_SECONDS, default 50: each league-train run's stop.time_s, its start-up included):
#    - default_job: the default connect-four job with learner=gpu, local inference (today's
#      path) and sampler.inference=server on cuda (benchmarks/bench_inference.py), with
#      LEAGUE_GPU_SAMPLERS' sampler sizes (default: 12 samplers of 128 env copies);
#    - mlp_job: the same with algo.params.model=mlp, server inference only;
#    - stacked: K=16 same-shaped PPO policies updated as one vmapped model against 16
#      separate learners in turn (benchmarks/bench_learner.py): the default job's model
#      (planes, mirror, distilled search; the record's stacked_speedup) and the plain conv;
#    - mix: the PPO+DQN mix (DQN at replay ratio 8, steps_per_call 8) on learner=shared_gpu
#      against its PPO-only twin (policies=ppo_vs_ppo) on the same learners.
#    Then one object for the run is appended to benchmarks/results/gpu.jsonl (the device's
#    name, the date, the commit, default_env_steps_per_s, mlp_env_steps_per_s,
#    stacked_speedup, mix_ratio; the figures beside them), and copied to $OUT/gpu.jsonl.
# 5. LEAGUE_GPU_BENCH=1 (default 0): benchmarks/bench_precision.py, fp32 against bf16 (bench.jsonl),
#    and the test files whose CPU stand-ins or refusals may read a GPU machine differently
#    (LEAGUE_GPU_MORE_TEST_FILES).
# 6. LEAGUE_GPU_RUNS="name ..." (default none): earlier checks' league-train runs (c4_gpu,
#    c4_gpu_bf16, mix8_gpu, mix8_gpu_steps8, ppo2_gpu, mix_shared), each's last metrics row.
#
# --dry-run: no build (the installed league._core), CUDA tests only where CUDA is, and every
# figure on CPU with tiny sizes (tic-tac-toe, in-process samplers, a few seconds each); the
# record goes to $OUT/gpu.jsonl only, never to benchmarks/results/.
#
# Every step has a time limit (timeout), and LEAGUE_GPU_DEADLINE_S (seconds since the start;
# 0, the default: none) skips the steps that would begin after it, so one hang cannot eat a
# lease. Outputs go to $OUT when set (the device tool's folder, which takes back at most 8
# files), else to a temporary directory: summary.txt (each step's exit status and seconds),
# env.log, tests.log, figures.jsonl, figures.log, gpu.jsonl (and bench.jsonl, bench.log, runs.log
# when those steps run).
set -uo pipefail
cd "$(dirname "$0")/.."
DRY_RUN=0
if [[ "${1:-}" == "--dry-run" ]]; then DRY_RUN=1; shift; fi
OUT="${OUT:-$(mktemp -d)}"
PY="${PYTHON:-python3}"
DEADLINE="${LEAGUE_GPU_DEADLINE_S:-570}"
export PYTHONUNBUFFERED=1
exec 3>&1  # step's own lines go to fd 3, never into a step's redirected output (bench.jsonl stays JSON)
mkdir -p "$OUT"
echo "outputs: $OUT"

step() {  # name, limit_s, command...: runs the command under timeout, logs its status to summary.txt (and fd 3)
  local name="$1" limit="$2" start=$SECONDS rc; shift 2
  if ((DEADLINE > 0 && SECONDS >= DEADLINE)); then
    echo "$name: skipped (deadline ${DEADLINE}s passed at ${SECONDS}s)" | tee -a "$OUT/summary.txt" >&3
    return 0
  fi
  echo "== $name" >&3
  timeout --kill-after=10 "$limit" "$@"
  rc=$?
  echo "$name: exit $rc in $((SECONDS - start))s$( ((rc == 124 || rc == 137)) && echo " (time limit ${limit}s)")" | tee -a "$OUT/summary.txt" >&3
  return 0
}

if [[ $# -ge 1 && -d "$1" ]]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/league-site "$1"/*.whl || exit 1
  export PYTHONPATH="/tmp/league-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

{
  nvidia-smi || true
  "$PY" -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-', 'numpy', numpy.__version__)"
  "$PY" -c "import ray, gymnasium, pettingzoo, hydra, trueskill; print('ray', ray.__version__, 'gymnasium', gymnasium.__version__, 'pettingzoo', pettingzoo.__version__, 'hydra', hydra.__version__)" || true
} 2>&1 | tee "$OUT/env.log"

build_core() {  # into build/gpu-check (ignored), then beside the sources
  cmake -S . -B build/gpu-check -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v "$PY")" \
    -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" >/tmp/league-cmake.log 2>&1 &&
    cmake --build build/gpu-check -j "${LEAGUE_GPU_BUILD_JOBS:-$(nproc)}" >>/tmp/league-cmake.log 2>&1 &&
    cp build/gpu-check/_core*.so league/
}
export -f build_core
export PY
if ((DRY_RUN == 0)); then
  step build_core 300 bash -c build_core
  tail -5 /tmp/league-cmake.log >>"$OUT/env.log"
fi
"$PY" -c "import league._core as core; print('league._core from', core.__file__)" 2>&1 | tee -a "$OUT/env.log" || { tail -30 /tmp/league-cmake.log; exit 1; }

tests() {  # the test files named, in one pytest
  [[ "${LEAGUE_GPU_TESTS:-1}" == 1 && $# -gt 0 ]] || return 0
  { exec 3>&1; step "pytest $*" "${LEAGUE_GPU_TEST_LIMIT_S:-120}" "$PY" -m pytest -q -p no:cacheprovider -m "not slow" "$@"; } 2>&1 | tee -a "$OUT/tests.log"
}

HAS_CUDA=0
"$PY" -c "import sys, torch; sys.exit(not torch.cuda.is_available())" && HAS_CUDA=1
# The tests that reach CUDA (on CPU they skip: the dry run runs them only where CUDA is).
if ((DRY_RUN == 0 || HAS_CUDA == 1)); then
  # shellcheck disable=SC2086
  tests ${LEAGUE_GPU_TEST_FILES-tests/test_gpu.py tests/test_inference.py}
fi

figures() {  # issue 36's figures into figures.jsonl, then the record into gpu.jsonl
  local seconds="${LEAGUE_GPU_SECONDS:-50}" device=cuda samplers="${LEAGUE_GPU_SAMPLERS:-sampler.num_samplers=12 sampler.num_envs=128}"
  local learner="learner=gpu learner.num_gpus_per_learner=0.5 sampler.inference_num_gpus=0.5"  # both Ray actors see the GPU
  local stacked=(--ks 16 --models default,conv --repeats 3) dry=() ov
  if ((DRY_RUN)); then
    seconds=4 device=cpu samplers="" learner="" stacked=(--ks 2 --models mlp --repeats 1 --rows 64 --epochs 1 --minibatch 32 --device cpu)
    dry=(--dry-run)
  fi
  local -a over=()
  for ov in $samplers $learner; do over+=(--override "$ov"); done
  : >"$OUT/figures.jsonl"
  step "default_job" $((2 * seconds + 200)) "$PY" benchmarks/bench_inference.py "${dry[@]}" --time-s "$seconds" --device "$device" \
    --label default "${over[@]}" >>"$OUT/figures.jsonl" 2>>"$OUT/figures.log"
  step "mlp_job" $((seconds + 150)) "$PY" benchmarks/bench_inference.py "${dry[@]}" --time-s "$seconds" --device "$device" --modes server \
    --label mlp --override algo.params.model=mlp "${over[@]}" >>"$OUT/figures.jsonl" 2>>"$OUT/figures.log"
  step "stacked" 150 "$PY" benchmarks/bench_learner.py "${stacked[@]}" >>"$OUT/figures.jsonl" 2>>"$OUT/figures.log"
  local -a mix=(--override "learner=shared_gpu") mix_dqn=(--override policies=ppo_vs_dqn --override policies.dqn_0.params.training_intensity=8
    --override +policies.dqn_0.params.steps_per_call=8)
  ((DRY_RUN)) && mix=() mix_dqn=(--override policies=ppo_vs_dqn --override policies.dqn_0.params.training_intensity=8)
  step "mix_ppo_alone" $((seconds + 150)) "$PY" benchmarks/bench_inference.py "${dry[@]}" --time-s "$seconds" --modes local --label ppo_alone \
    --override policies=ppo_vs_ppo "${mix[@]}" >>"$OUT/figures.jsonl" 2>>"$OUT/figures.log"
  step "mix_ppo_dqn" $((seconds + 150)) "$PY" benchmarks/bench_inference.py "${dry[@]}" --time-s "$seconds" --modes local --label ppo_dqn_mix \
    "${mix_dqn[@]}" "${mix[@]}" >>"$OUT/figures.jsonl" 2>>"$OUT/figures.log"
  cat "$OUT/figures.jsonl" >&3
  local record=(--record "$OUT/figures.jsonl" --append-to "$OUT/gpu.jsonl")
  ((DRY_RUN)) || record+=(--append-to benchmarks/results/gpu.jsonl)
  "$PY" benchmarks/bench_inference.py "${record[@]}" >&3
}
[[ "${LEAGUE_GPU_FIGURES:-1}" == 1 ]] && figures

if [[ "${LEAGUE_GPU_BENCH:-0}" == 1 ]]; then
  benches=()
  ((HAS_CUDA)) && benches+=("--device cuda" "--device cuda --fixed-rows")
  benches+=("--device cpu")
  for args in "${benches[@]}"; do
    # shellcheck disable=SC2086
    step "bench_precision $args" 120 "$PY" benchmarks/bench_precision.py $args ${LEAGUE_GPU_BENCH_ARGS:-} >>"$OUT/bench.jsonl" 2>>"$OUT/bench.log"
  done
  cat "$OUT/bench.jsonl"
  # shellcheck disable=SC2086
  tests ${LEAGUE_GPU_MORE_TEST_FILES-tests/test_learner.py tests/test_data_parallel.py tests/test_bad_input.py}
fi

run() {  # name, seconds, overrides...
  local name="$1" seconds="$2"; shift 2
  [[ " ${LEAGUE_GPU_RUNS:-none} " == *" $name "* ]] || return 0
  seconds="${LEAGUE_GPU_SECONDS:-$seconds}"
  step "league-train $name $* (${seconds} s)" $((seconds + 120)) "$PY" -m league.cli.train logging=quiet "stop.time_s=$seconds" \
    "hydra.run.dir=/tmp/league-runs/$name" "$@" >"/tmp/league-runs-$name.log" 2>&1
  grep -v "logging.cc\|^ *@\|^PC:\|SIGTERM" "/tmp/league-runs-$name.log" | tail -4
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
exec 3>&1
run c4_gpu 60 learner=gpu
run c4_gpu_bf16 60 learner=gpu learner.precision=bf16
run mix8_gpu 60 learner=gpu policies=ppo_vs_dqn policies.dqn_0.params.training_intensity=8
run mix8_gpu_steps8 60 learner=gpu policies=ppo_vs_dqn policies.dqn_0.params.training_intensity=8 +policies.dqn_0.params.steps_per_call=8
run ppo2_gpu 60 learner=gpu policies=ppo_vs_ppo
run mix_shared 45 learner=shared_gpu policies=ppo_vs_dqn
} 2>&1 | tee "$OUT/runs.log"
echo "== summary (${SECONDS}s)"
cat "$OUT/summary.txt"
