#!/usr/bin/env bash
# The checks that need CUDA, as one script for a machine that has a GPU but maybe not this
# project's installed environment (no network; Python packages it lacks can come as wheels).
#
#   bash scripts/gpu_check.sh [WHEEL_DIR]
#   LEAGUE_GPU_RUNS=none bash scripts/gpu_check.sh [WHEEL_DIR]       # tests and bench only
#   LEAGUE_GPU_TESTS=0 LEAGUE_GPU_BENCH=0 LEAGUE_GPU_RUNS="mix8_gpu_steps8 ppo2_gpu" LEAGUE_GPU_SECONDS=45 \
#     bash scripts/gpu_check.sh [WHEEL_DIR]                           # a subset of the runs
#
# 1. Builds league._core with CMake against the interpreter's pybind11 (no pip build) and
#    puts it beside the sources, so the tree runs from PYTHONPATH=. .
# 2. Installs the wheels in WHEEL_DIR (if given) into a scratch directory on PYTHONPATH:
#    the dependencies the machine lacks (Ray, gymnasium, pettingzoo, hydra, ...).
# 3. LEAGUE_GPU_TESTS=1 (default): the test files that reach CUDA (LEAGUE_GPU_TEST_FILES),
#    one pytest per file, -m "not slow". Where CUDA is present the tests that stand in for
#    it on CPU skip, and the gpu-marked ones run.
# 4. LEAGUE_GPU_BENCH=1 (default): benchmarks/bench_precision.py, the default job's update in
#    fp32 against bf16, on cuda (sizes varying as in a run, then --fixed-rows), then on this
#    machine's CPU for reference: one JSON line each in bench.jsonl (LEAGUE_GPU_BENCH_ARGS: more
#    arguments for each, e.g. "--rows 600 --repeats 2" for a quick pass). Then the test files
#    whose CPU stand-ins or refusals may read a GPU machine differently
#    (LEAGUE_GPU_MORE_TEST_FILES: the learner, data-parallel and bad-input tests).
# 5. Trains with the learner on the GPU through league-train (Ray learner actors):
#    learner=gpu on the default connect-four job, in fp32 and in bf16; the PPO+DQN mix at
#    DQN's own replay ratio 8 (one gradient step per learner call, then 8) and its PPO-only
#    twin (bench_composition's pair, on a learner device); learner=shared_gpu (fractional
#    GPU shares). Prints each run's last metrics row. LEAGUE_GPU_RUNS="name ...": only
#    those ("none": no run); LEAGUE_GPU_SECONDS: each run's length.
#
# Every step has a time limit (timeout), and LEAGUE_GPU_DEADLINE_S (seconds since the start;
# 0, the default: none) skips the steps that would begin after it, so one hang cannot eat a
# lease. Outputs go to $OUT when set (the device tool's folder, which takes back at most 8
# files), else to a temporary directory: summary.txt (each step's exit status and seconds),
# env.log, tests.log, bench.jsonl, bench.log, runs.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$(mktemp -d)}"
PY="${PYTHON:-python3}"
DEADLINE="${LEAGUE_GPU_DEADLINE_S:-0}"
export PYTHONUNBUFFERED=1
exec 3>&1  # step's own lines go to fd 3, never into a step's redirected output (bench.jsonl stays JSON)
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
step build_core 300 bash -c build_core
tail -5 /tmp/league-cmake.log >>"$OUT/env.log"
"$PY" -c "import league._core as core; print('league._core from', core.__file__)" 2>&1 | tee -a "$OUT/env.log" || { tail -30 /tmp/league-cmake.log; exit 1; }

tests() {  # the test files named, one pytest each
  [[ "${LEAGUE_GPU_TESTS:-1}" == 1 ]] || return 0
  local file
  for file in "$@"; do
    { exec 3>&1; step "pytest $file" "${LEAGUE_GPU_TEST_LIMIT_S:-150}" "$PY" -m pytest -q -p no:cacheprovider -m "not slow" "$file"; } 2>&1 | tee -a "$OUT/tests.log"
  done
}

# The tests that reach CUDA first, then the bench, then the tests whose CPU stand-ins or
# refusals may read a GPU machine differently.
tests ${LEAGUE_GPU_TEST_FILES-tests/test_gpu.py tests/test_bench_precision.py}

if [[ "${LEAGUE_GPU_BENCH:-1}" == 1 ]]; then
  benches=()
  if "$PY" -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
    benches+=("--device cuda" "--device cuda --fixed-rows")
  fi
  benches+=("--device cpu")
  for args in "${benches[@]}"; do
    # shellcheck disable=SC2086
    step "bench_precision $args" 120 "$PY" benchmarks/bench_precision.py $args ${LEAGUE_GPU_BENCH_ARGS:-} >>"$OUT/bench.jsonl" 2>>"$OUT/bench.log"
  done
  cat "$OUT/bench.jsonl"
fi

tests ${LEAGUE_GPU_MORE_TEST_FILES-tests/test_learner.py tests/test_data_parallel.py tests/test_bad_input.py}

run() {  # name, seconds, overrides...
  local name="$1" seconds="$2"; shift 2
  [[ -z "${LEAGUE_GPU_RUNS:-}" || " $LEAGUE_GPU_RUNS " == *" $name "* ]] || return 0
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
