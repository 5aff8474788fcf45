#!/usr/bin/env bash
# Render a league-report page in headless Chromium and save a screenshot to look at.
#
#   scripts/check_report_render.sh [RUN_DIR] [OUT_PNG]
#
# RUN_DIR: a training run directory; without one, a tiny in-process tic-tac-toe run (no Ray,
# a few seconds) is trained into a temporary directory first. OUT_PNG defaults to
# /tmp/league_report.png. The report is written to RUN_DIR/report.html.
# Exits 0 with a message when no Chromium is installed (Debian: apt-get install chromium);
# fails when the report or the screenshot cannot be made, or the screenshot is blank.
# PYTHON selects the interpreter (default: python3).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
RUN_DIR="${1:-}"
OUT_PNG="${2:-/tmp/league_report.png}"

BROWSER=""
for name in chromium chromium-browser google-chrome google-chrome-stable chrome-headless-shell; do
    if command -v "$name" >/dev/null 2>&1; then BROWSER="$(command -v "$name")"; break; fi
done
if [[ -z "$BROWSER" ]]; then
    echo "check_report_render: skipped, no Chromium found (apt-get install chromium)"
    exit 0
fi

if [[ -z "$RUN_DIR" ]]; then
    RUN_DIR="$(mktemp -d)/tiny_run"
    "$PYTHON" - "$RUN_DIR" <<'EOF'
import sys

from league.trainer import Trainer

sys.path.insert(0, "tests")  # the tests' tiny run (run from the repository root, as below)
from run_helpers import tiny_run_config

cfg = tiny_run_config(
    algo={"name": "ppo", "params": {"train_batch_size": 64, "minibatch_size": 32, "num_epochs": 1}},
    stop={"iterations": 6},
    checkpoint={"interval": 0},
    logging={"progress": False},
)
trainer = Trainer(cfg, sys.argv[1])
try:
    trainer.train()
finally:
    trainer.close()
EOF
fi

REPORT="$RUN_DIR/report.html"
"$PYTHON" -m league.cli.report "$RUN_DIR" --out "$REPORT"
REPORT_ABS="$(cd "$(dirname "$REPORT")" && pwd)/$(basename "$REPORT")"

# Chromium's own D-Bus and GPU warnings are noise here; its exit status decides.
"$BROWSER" --headless --disable-gpu --no-sandbox --hide-scrollbars \
    --window-size=1280,4000 --screenshot="$OUT_PNG" "file://$REPORT_ABS" 2>/dev/null

"$PYTHON" - "$OUT_PNG" <<'EOF'
import sys

from PIL import Image  # matplotlib depends on Pillow

image = Image.open(sys.argv[1]).convert("L")
low, high = image.getextrema()
if high - low < 50:
    sys.exit(f"check_report_render: {sys.argv[1]} looks blank (gray levels {low}..{high})")
print(f"check_report_render: {image.size[0]}x{image.size[1]} screenshot at {sys.argv[1]}; look at it")
EOF
