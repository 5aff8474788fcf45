"""``league-report``: write the HTML report of a training run.

::

    league-report outputs/2025-01-01/12-00-00            # -> .../12-00-00/report.html
    league-report outputs/2025-01-01/12-00-00 --out /tmp/run.html

Exit status: 0 when the report was written; 2 when the run directory is missing, is not a
directory or holds no run data (or the arguments are wrong); 1 when the report cannot be
written (e.g. no permission).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``run_dir`` and ``--out``."""
    parser = argparse.ArgumentParser(
        prog="league-report", description="Write a self-contained HTML report of a league training run."
    )
    parser.add_argument("run_dir", help="run directory (holds metrics.jsonl and summary.json)")
    parser.add_argument("--out", default=None, help="output HTML file (default: RUN_DIR/report.html)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (see the module docstring)."""
    args = build_parser().parse_args(argv)
    # Imported here so `--help` and argument errors answer without loading matplotlib.
    from league.report import RunDirError, write_report

    try:
        path = write_report(args.run_dir, args.out)
    except RunDirError as err:
        print(f"league-report: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"league-report: cannot write the report: {err}", file=sys.stderr)
        return 1
    print(f"league-report: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
