"""The reproduction report: rows of `scripts/reproduce.py` -> REPORT.md and a self-contained report.html.

A *row* is what `scripts/reproduce.py` records per experiment (and writes to `results.json`):

    {"name": "lqer/reproduce", "seconds": 81.2, "result": Result.to_json(), "figures": [...]}
    {"name": "pcm/reproduce", "seconds": 3.0, "error": "ValueError: ..."}

`figures` are paths relative to the report folder. The report reads as a reproduction: one table
row per paper with the paper's headline claim in words, our number, the paper's number and the
verdict the experiment computed, then one section per paper with every claim, the notes and the
figures (each once). The per-metric lists stay in `results.json`.
"""

from __future__ import annotations

import base64
import html
import mimetypes
import pathlib
from collections.abc import Sequence
from typing import Any

from jaxml.progress import format_duration

VERDICT_ORDER = ("holds", "suggestive", "does not hold", "not comparable")
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")


def _slug(row: dict[str, Any]) -> str:
    return row["name"].split("/")[0]


def _md_cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "—"


def _claims(row: dict[str, Any]) -> list[dict[str, str]]:
    return list(row.get("result", {}).get("claims", []))


def headline_claim(row: dict[str, Any]) -> dict[str, str] | None:
    """The claim shown in the summary table: the first of the row's claims (None if it has none)."""
    claims = _claims(row)
    return claims[0] if claims else None


def verdict_counts(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many claims over all rows hold, do not hold or are not comparable (failed rows apart)."""
    counts = {v: 0 for v in VERDICT_ORDER}
    for row in rows:
        for claim in _claims(row):
            counts[claim["verdict"]] = counts.get(claim["verdict"], 0) + 1
    return counts


def _summary_cells(row: dict[str, Any]) -> tuple[str, str, str, str]:
    if "error" in row:
        return (f"failed: {row['error'][:200]}", "—", "—", "failed")
    claim = headline_claim(row)
    if claim is None:
        result = row["result"]
        key = result.get("headline")
        value = result["metrics"].get(key) if key else None
        return (result.get("notes", "")[:200] or "—", f"{key} = {value:.4g}" if value is not None else "—", "—",
                "not comparable")
    return claim["text"], claim["ours"], claim.get("paper") or "—", claim["verdict"]


def _header(rows, scale: str, command: str, seconds: float, machine: str) -> tuple[str, str]:
    counts = verdict_counts(rows)
    failed = sum("error" in r for r in rows)
    claims = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    line = (f"Scale `{scale}`; {len(rows)} experiment(s) in {format_duration(seconds)} on {machine}. "
            f"Claims: {claims or 'none'}" + (f"; {failed} experiment(s) failed" if failed else "") + ".")
    return line, f"Command: `{command}`. Per-metric values: `results.json`."


def to_markdown(rows: Sequence[dict[str, Any]], *, scale: str, command: str, seconds: float,
                machine: str) -> str:
    """REPORT.md: the summary table, then a section per paper (claims, notes, figures)."""
    line, cmd = _header(rows, scale, command, seconds, machine)
    out = ["# jaxml reproduction report", "", line, cmd, "",
           "| paper | claim | ours | paper's number | verdict | time |", "|---|---|---|---|---|---|"]
    for row in rows:
        text, ours, paper, verdict = _summary_cells(row)
        slug = _slug(row)
        out.append(f"| [{slug}](#{slug}) | {_md_cell(text)} | {_md_cell(ours)} | {_md_cell(paper)} | "
                   f"**{verdict}** | {format_duration(row['seconds'])} |")
    out.append("")
    for row in rows:
        slug = _slug(row)
        out += [f"## {slug}", "", f"`{row['name']}` in {format_duration(row['seconds'])}.", ""]
        if "error" in row:
            out += [f"Failed: `{_md_cell(row['error'])}`", ""]
            continue
        claims = _claims(row)
        if claims:
            out += ["| claim | ours | paper's number | verdict |", "|---|---|---|---|"]
            out += [f"| {_md_cell(c['text'])} | {_md_cell(c['ours'])} | {_md_cell(c.get('paper', ''))} | "
                    f"{c['verdict']} |" for c in claims]
            out.append("")
        notes = row["result"].get("notes", "")
        if notes:
            out += [notes, ""]
        for fig in row.get("figures", []):
            name = pathlib.PurePosixPath(fig).name
            out.append(f"![{name}]({fig})" if fig.lower().endswith(_IMAGE_SUFFIXES) else f"- [{name}]({fig})")
        out.append("")
    return "\n".join(out)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1.5em; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; font-size: 14px; }
th { background: #f2f2f2; }
.holds { background: #dff3df; } .suggestive { background: #f4f1d0; } .does-not-hold { background: #f8dcdc; }
.not-comparable { background: #eeeeee; } .failed { background: #f4b8b8; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
iframe { width: 100%; height: 420px; border: 1px solid #ddd; }
.notes { max-width: 1100px; }
"""


def _code_spans(text: str) -> str:
    """Markdown `code` spans of an escaped text as <code> elements."""
    parts = text.split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _data_uri(path: pathlib.Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _html_figure(folder: pathlib.Path, rel: str) -> str:
    path = folder / rel
    name = html.escape(path.name)
    if path.suffix.lower() in _IMAGE_SUFFIXES:
        return f'<figure><img alt="{name}" src="{_data_uri(path)}"><figcaption>{name}</figcaption></figure>'
    if path.suffix.lower() in (".html", ".htm"):   # heatmaps: inlined as a sandboxed document
        return (f'<figure><iframe title="{name}" sandbox="" srcdoc="{html.escape(path.read_text(), quote=True)}">'
                f'</iframe><figcaption>{name}</figcaption></figure>')
    return f"<p>{name} (not an image; see the report folder)</p>"


def to_html(rows: Sequence[dict[str, Any]], folder: str | pathlib.Path, *, scale: str, command: str,
            seconds: float, machine: str) -> str:
    """report.html: the same content as REPORT.md with every figure and heatmap inlined (no links
    to other files), so the one file can be mailed or opened anywhere."""
    folder = pathlib.Path(folder)
    esc = html.escape
    line, cmd = _header(rows, scale, command, seconds, machine)
    cls = lambda verdict: verdict.replace(" ", "-")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           "<title>jaxml reproduction report</title>", f"<style>{_CSS}</style></head><body>",
           "<h1>jaxml reproduction report</h1>", f"<p>{_code_spans(esc(line))}<br>{_code_spans(esc(cmd))}</p>",
           '<table id="summary"><tr><th>paper</th><th>claim</th><th>ours</th><th>paper\'s number</th>'
           "<th>verdict</th><th>time</th></tr>"]
    for row in rows:
        text, ours, paper, verdict = _summary_cells(row)
        slug = esc(_slug(row))
        out.append(f'<tr><td><a href="#{slug}">{slug}</a></td><td>{esc(text)}</td><td>{esc(ours)}</td>'
                   f'<td>{esc(paper)}</td><td class="{cls(verdict)}"><b>{esc(verdict)}</b></td>'
                   f"<td>{format_duration(row['seconds'])}</td></tr>")
    out.append("</table>")
    for row in rows:
        slug = esc(_slug(row))
        out.append(f'<h2 id="{slug}">{slug}</h2><p><code>{esc(row["name"])}</code> in '
                   f"{format_duration(row['seconds'])}.</p>")
        if "error" in row:
            out.append(f'<p class="failed">Failed: <code>{esc(row["error"])}</code></p>')
            continue
        claims = _claims(row)
        if claims:
            out.append("<table><tr><th>claim</th><th>ours</th><th>paper's number</th><th>verdict</th></tr>")
            out += [f'<tr><td>{esc(c["text"])}</td><td>{esc(c["ours"])}</td><td>{esc(c.get("paper") or "—")}</td>'
                    f'<td class="{cls(c["verdict"])}">{esc(c["verdict"])}</td></tr>' for c in claims]
            out.append("</table>")
        notes = row["result"].get("notes", "")
        if notes:
            out.append(f'<p class="notes">{esc(notes)}</p>')
        out += [_html_figure(folder, fig) for fig in row.get("figures", [])]
    out.append("</body></html>")
    return "\n".join(out)
