"""The live terminal view (rich): suspects, watched units and drifts, redrawn each interval."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from labtest.doctor.service import Report


def render(report: Report) -> Group:
    head = Text(f"labtest doctor  interval {report.interval}  {report.ports_read} ports read in "
                f"{report.collect_s:.1f} s  {report.probe_paths} probe paths  "
                f"{len(report.not_observed)} readings not observed  "
                f"{len(report.failed)} devices not read", style="bold")
    table = Table(expand=True)
    for col in ("#", "unit", "kind", "confidence", "evidence"):
        table.add_column(col, no_wrap=col != "evidence")
    for i, s in enumerate(report.suspects, 1):
        table.add_row(str(i), s.unit, s.kind, f"{s.confidence:.2f}",
                      "\n".join(e.text for e in s.evidence[:3]), style="red")
    for s in report.watched[:5]:
        table.add_row("-", s.unit, s.kind, f"{s.confidence:.2f}",
                      s.evidence[0].text if s.evidence else "", style="yellow")
    if not report.suspects and not report.watched:
        table.add_row("", "no suspect", "", "", "", style="green")
    drifts = [Text(f"drift: {d.text(w)}", style="cyan") for w, d in report.drifts[:5]]
    return Group(head, table, *drifts)
