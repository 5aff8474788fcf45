"""HTML building blocks of the report: the page, sections, notes, key-value tables.

Everything here takes plain strings and escapes them (``html.escape`` with quotes), except
arguments named ``*_html``, which are markup built by the report itself. The page is one
file with inline CSS and no script, so it opens the same from disk, a mail or an archive.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

__all__ = ["page", "section", "note", "key_value_table", "flatten_config", "format_value"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1d1d1f;
       margin: 0 auto; max-width: 1240px; padding: 16px 24px 48px; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.2em 0; word-break: break-all; }
h2 { font-size: 1.25em; border-bottom: 2px solid #ddd; padding-bottom: 4px; margin-top: 1.8em; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; word-break: break-all; }
.note { color: #6b5900; background: #fff8d9; border-left: 4px solid #e6c200; padding: 4px 10px; margin: 6px 0; }
.skip { color: #666; font-style: italic; }
table.kv { border-collapse: collapse; font-size: 0.92em; }
table.kv th { text-align: left; font-weight: 600; padding: 2px 18px 2px 0; vertical-align: top; white-space: nowrap; }
table.kv td { padding: 2px 0; font-family: ui-monospace, "DejaVu Sans Mono", monospace; word-break: break-all; }
table.kv tr:nth-child(even) { background: #f7f7f7; }
table.board td { text-align: right; padding: 2px 0 2px 18px; }
svg.chart { max-width: 100%; height: auto; display: block; }
svg.tree { max-width: 100%; height: auto; display: block; font-family: inherit; }
svg.tree .player { font-size: 13px; font-weight: 600; }
svg.tree .role, svg.tree .tick, svg.tree .axis { font-size: 11px; fill: #666; font-weight: normal; }
svg.tree .version { font-size: 10px; fill: #333; }
svg.tree .fixedname { font-size: 12px; }
.scroll { overflow-x: auto; }
table.payoff { border-collapse: collapse; font-size: 10px; font-variant-numeric: tabular-nums; }
table.payoff td { width: 25px; min-width: 25px; height: 20px; text-align: center; border: 1px solid #fff; padding: 0; }
table.payoff td.few { background: #eee; color: #aaa; }
table.payoff td.diag { background: #cfcfcf; }
table.payoff th { font-weight: 600; padding: 0 4px; }
table.payoff th.rowname { text-align: left; white-space: nowrap; }
table.payoff th.corner { font-weight: normal; color: #888; text-align: left; }
table.payoff .idx { color: #888; display: inline-block; min-width: 1.6em; text-align: right; margin-right: 4px; }
.legend { font-size: 0.85em; color: #555; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #aaa; vertical-align: middle; }
"""


def page(title: str, body_html: Iterable[str]) -> str:
    """The complete HTML document."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body_html)
        + "\n</body>\n</html>\n"
    )


def section(anchor: str, title: str, content_html: str) -> str:
    """An ``<h2>`` section with a fixed anchor id (``anchor`` is report-chosen, not user data)."""
    return f'<section id="{escape(anchor)}">\n<h2>{escape(title)}</h2>\n{content_html}\n</section>'


def note(text: str, skipped: bool = False) -> str:
    """A short remark: a warning box, or a plain grey line for a part that was skipped."""
    return f'<p class="{"skip" if skipped else "note"}">{escape(text)}</p>'


def format_value(value: Any) -> str:
    """A config or summary value as text: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def key_value_table(items: Iterable[tuple[str, Any]]) -> str:
    """A two-column table, keys and values escaped."""
    rows = [f"<tr><th>{escape(str(k))}</th><td>{escape(format_value(v))}</td></tr>" for k, v in items]
    return '<table class="kv">' + "".join(rows) + "</table>"


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``{"a": {"b": 1}}`` -> ``[("a.b", 1)]``; empty dicts stay as leaves."""
    out: list[tuple[str, Any]] = []
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.extend(flatten_config(value, f"{name}."))
        else:
            out.append((name, value))
    return out
