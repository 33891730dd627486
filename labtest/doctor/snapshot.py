"""An HTML snapshot of one report: the fabric drawn by layer, each link coloured by health.

Spines on top, leaves below, hosts (and everything else) at the bottom; a link
is green when healthy, orange when watched (evidence below the paging
confidence), red when it is a suspect, grey when neither end could be read.
Below the picture: the suspects with their evidence, drifts, and what was not
observed. One self-contained file (the picture is inline SVG).
"""

from __future__ import annotations

import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from labtest.doctor.judge import Plan
from labtest.doctor.service import Report

COLOURS = {"healthy": "#2e9e44", "watched": "#f0a020", "suspect": "#d62728", "unread": "#b0b0b0"}
LAYERS = ("spine", "leaf")  # everything else goes in the bottom row


def link_states(plan: Plan, report: Report, read: set[str]) -> dict[str, str]:
    """link name -> healthy | watched | suspect | unread."""
    state: dict[str, str] = {}
    for link in plan.testbed.links:
        ends = [str(e) for e in link.ends]
        state[link.name] = "healthy" if any(e in read for e in ends) else "unread"
    for units, level in ((report.watched, "watched"), (report.suspects, "suspect")):
        for s in units:
            lk = plan.link_of.get(s.unit)
            state[lk.name if lk is not None else s.unit] = level
    return state


def topology_svg(plan: Plan, states: dict[str, str]) -> str:
    tb = plan.testbed
    rows: list[list[str]] = [[n for n, d in tb.devices.items() if d.role == r] for r in LAYERS]
    rows.append([n for n, d in tb.devices.items() if d.role not in LAYERS
                 and tb.links_of(n)])
    pos: dict[str, tuple[float, float]] = {}
    for depth, names in enumerate(rows):
        for i, n in enumerate(names):
            pos[n] = ((i + 1) / (len(names) + 1), 1.0 - depth / max(len(rows) - 1, 1))
    width = max(8.0, 0.35 * max(len(r) for r in rows))
    fig, ax = plt.subplots(figsize=(width, 5))
    order = ("healthy", "unread", "watched", "suspect")  # the sick drawn last, on top
    for level in order:
        for lk in tb.links:
            if states.get(lk.name) != level:
                continue
            a, b = (e.device for e in lk.ends)
            if a in pos and b in pos:
                (x0, y0), (x1, y1) = pos[a], pos[b]
                ax.plot([x0, x1], [y0, y1], color=COLOURS[level],
                        linewidth=3.5 if level == "suspect" else 1.2, zorder=1)
    for n, (x, y) in pos.items():
        ax.scatter([x], [y], s=160, color="#34495e", zorder=2)
        ax.annotate(n, (x, y), xytext=(0, 9), textcoords="offset points", ha="center",
                    fontsize=7)
    for level, colour in COLOURS.items():
        ax.plot([], [], color=colour, linewidth=3, label=level)
    ax.legend(loc="lower right", fontsize=7, frameon=False, ncol=4)
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.15, 1.12)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def write_html(path: Path, plan: Plan, report: Report, read: set[str]) -> Path:
    states = link_states(plan, report, read)
    e = html.escape
    parts = [
        "<!doctype html><meta charset='utf-8'><title>labtest doctor</title>",
        "<style>body{font-family:sans-serif;margin:1.5em}td,th{padding:2px 8px;"
        "text-align:left;vertical-align:top}.c{font-weight:bold}</style>",
        f"<h1>labtest doctor: {e(plan.testbed.name)}, interval {report.interval}</h1>",
        f"<p>{report.ports_read} ports read in {report.collect_s:.1f} s; "
        f"{report.probe_paths} probe paths; {len(report.suspects)} suspect(s).</p>",
        topology_svg(plan, states),
        "<h2>Suspects</h2>",
    ]
    if not report.suspects:
        parts.append("<p>None at or above the paging confidence.</p>")
    else:
        parts.append("<table><tr><th>#</th><th>unit</th><th>kind</th><th>confidence</th>"
                     "<th>evidence</th></tr>")
        for i, s in enumerate(report.suspects, 1):
            ev = "<br>".join(e(x.text) for x in s.evidence)
            parts.append(f"<tr><td>{i}</td><td>{e(s.unit)}</td><td>{s.kind}</td>"
                         f"<td class=c>{s.confidence:.2f}</td><td>{ev}</td></tr>")
        parts.append("</table>")
    if report.drifts:
        parts.append("<h2>Drifts</h2><ul>" + "".join(
            f"<li>{e(d.text(w))}</li>" for w, d in report.drifts) + "</ul>")
    if report.failed or report.not_observed:
        parts.append("<h2>Not read / not observed</h2><ul>" + "".join(
            f"<li>{e(k)}: {e(v)}</li>" for k, v in {**report.failed,
                                                   **report.not_observed}.items()) + "</ul>")
    path.write_text("\n".join(parts) + "\n")
    return path
