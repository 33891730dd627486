"""The operator's view: a live panel on a terminal, log lines anywhere else.

``LivePanel`` (rich) redraws elapsed/remaining run time, the chamber phase,
readings and samples stored, units with alarms so far and the latest alarms.
``LogLines`` prints one line per ``interval_s`` of wall time plus every alarm
and error as it happens, for CI logs and files. Both only read ``Status``.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from labtest.burnin.live import Status
from labtest.burnin.store import Event

SHOWN_EVENTS = frozenset({"alarm", "error", "phase", "resumed", "started", "plan", "load", "behind",
                          "module-changed", "module-missing", "stopped", "complete"})


def hours(t_s: float) -> str:
    h, rem = divmod(int(max(t_s, 0.0)), 3600)
    return f"{h:d}:{rem // 60:02d}"


def summary_line(st: Status) -> str:
    pct = 100.0 * st.t_s / st.duration_s if st.duration_s else 100.0
    chamber = f" chamber {st.chamber_c:.1f} C" if st.chamber_c is not None else ""
    behind = f" behind {st.behind_s:.0f} s" if st.behind_s > 1.0 else ""
    return (f"{st.run_id} {hours(st.t_s)}/{hours(st.duration_s)} h ({pct:5.1f} %) "
            f"[{st.phase}]{chamber} readings {st.readings_done}/{st.readings_total} "
            f"samples {st.samples} errors {st.errors} units with alarms "
            f"{len(st.alarmed)}/{st.units} wall {st.wall_elapsed_s:.0f} s{behind}")


class LogLines:
    def __init__(self, stream: TextIO | None = None, interval_s: float = 10.0) -> None:
        self.stream = stream or sys.stdout
        self.interval_s = interval_s
        self._last = 0.0

    def update(self, status: Status) -> None:
        now = time.monotonic()
        if now - self._last >= self.interval_s:
            self._last = now
            self._print(summary_line(status))

    def event(self, status: Status, event: Event) -> None:
        if event.kind in SHOWN_EVENTS:
            self._print(f"{status.run_id} {hours(event.t_s)} h {event.kind}: {event.text}")

    def close(self, status: Status) -> None:
        self._print(summary_line(status))

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


class LivePanel:
    """A rich Live panel, refreshed at most ``fps`` times a second."""

    def __init__(self, fps: float = 4.0) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console()
        self._live = Live(console=self.console, auto_refresh=False, transient=False)
        self._live.start()
        self._min_gap_s = 1.0 / fps
        self._last = 0.0

    def update(self, status: Status, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= self._min_gap_s:
            self._last = now
            self._live.update(self._render(status), refresh=True)

    def event(self, status: Status, event: Event) -> None:
        if event.kind in ("phase", "resumed", "started", "stopped", "complete"):
            self.update(status, force=True)

    def close(self, status: Status) -> None:
        self.update(status, force=True)
        self._live.stop()

    def _render(self, st: Status) -> Any:  # a rich Panel (rich is imported on use)
        from rich.panel import Panel
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        left = st.duration_s - st.t_s
        grid.add_row("run time", f"{hours(st.t_s)} h of {hours(st.duration_s)} h "
                     f"({hours(left)} h left), wall {st.wall_elapsed_s:.0f} s")
        grid.add_row("", ProgressBar(total=st.duration_s, completed=st.t_s, width=50))
        chamber = f", chamber air {st.chamber_c:.1f} C" if st.chamber_c is not None else ""
        grid.add_row("phase", f"{st.phase}{chamber}")
        grid.add_row("stored", f"{st.readings_done}/{st.readings_total} readings, "
                     f"{st.samples} samples, {st.errors} failed readings")
        if st.behind_s > 1.0:
            grid.add_row("schedule", f"[yellow]{st.behind_s:.0f} s behind[/yellow]")
        ok = st.units - len(st.alarmed)
        grid.add_row("units", f"[green]{ok} without alarms[/green], "
                     f"[red]{len(st.alarmed)} with alarms[/red] (verdict at the end)")
        for line in list(st.latest)[-5:]:
            grid.add_row("alarm", f"[yellow]{line}[/yellow]")
        return Panel(grid, title=f"burn-in {st.station}  {st.run_id}")
