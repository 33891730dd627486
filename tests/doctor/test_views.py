"""The HTML snapshot and the live view of one report."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from labtest.doctor.evidence import PortReading, Snapshot
from labtest.doctor.judge import Plan
from labtest.doctor.live import render
from labtest.doctor.service import Doctor, Report
from labtest.doctor.snapshot import link_states, write_html
from labtest.measure import load_limits
from labtest.run import default_testbed
from labtest.testbed import load_testbed

BAD = "leaf1:Ethernet0--spine1:Ethernet0"


def _report() -> tuple[Doctor, Report, Snapshot]:
    tb = load_testbed(default_testbed())
    doctor = Doctor(Plan.of(tb), load_limits(tb.limits))  # type: ignore[arg-type]
    snap = Snapshot(ports={
        "spine1:Ethernet0": PortReading("spine1", "Ethernet0", 0.0, pre_fec_ber=3e-4),
        # marginal Rx power (a marginal port BER now fails the per-lane target it bounds)
        "leaf2:Ethernet0": PortReading("leaf2", "Ethernet0", 0.0, rx_power_dbm=(-5.2,) * 4),
        "leaf1:Ethernet8": PortReading("leaf1", "Ethernet8", 0.0, pre_fec_ber=1e-11),
    }, not_observed={"leaf3 PFC": "driver offers no PfcQueues"})
    return doctor, doctor.step(snap), snap


def test_link_colours_follow_the_report() -> None:
    doctor, report, snap = _report()
    states = link_states(doctor.plan, report, set(snap.ports))
    assert states[BAD] == "suspect"
    assert states["leaf2:Ethernet0--spine1:Ethernet8"] == "watched"
    assert states["leaf1:Ethernet8--spine2:Ethernet1/1"] == "healthy"
    assert states["leaf4:Ethernet0--spine1:Ethernet24"] == "unread"  # neither end read


def test_html_snapshot_has_the_picture_the_suspect_and_the_holes(tmp_path: Path) -> None:
    doctor, report, snap = _report()
    page = write_html(tmp_path / "d.html", doctor.plan, report, set(snap.ports)).read_text()
    assert "<svg" in page and "#d62728" in page  # the suspect's red line is drawn
    assert BAD in page and "pre-FEC BER received at spine1:Ethernet0" in page
    assert "leaf3 PFC: driver offers no PfcQueues" in page


def test_live_view_lists_suspects_then_watched() -> None:
    _, report, _ = _report()
    console = Console(width=200, record=True)
    console.print(render(report))
    text = console.export_text()
    assert text.index(BAD) < text.index("leaf2:Ethernet0--spine1:Ethernet8")
