"""The Prometheus exposition of one report."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest.doctor.evidence import PortReading, Snapshot
from labtest.doctor.judge import Plan
from labtest.doctor.service import Doctor
from labtest.measure import load_limits
from labtest.run import default_testbed
from labtest.testbed import load_testbed

pytest.importorskip("prometheus_client", reason="prometheus_client not installed: "
                    "pip install 'labtest[doctor]' (or the dev extra)")
from labtest.doctor.metrics import DoctorMetrics


def test_a_suspect_link_is_health_2_at_both_ends_and_ranked(tmp_path: Path) -> None:
    tb = load_testbed(default_testbed())
    doctor = Doctor(Plan.of(tb), load_limits(tb.limits))  # type: ignore[arg-type]
    bad = PortReading("spine1", "Ethernet0", 0.0, oper_up=True, pre_fec_ber=3e-4)
    report = doctor.step(Snapshot(ports={bad.name: bad}))
    metrics = DoctorMetrics(doctor.plan)
    metrics.update(report)
    text = metrics.text().decode()
    link = "leaf1:Ethernet0--spine1:Ethernet0"
    assert (f'labtest_doctor_link_health{{device="spine1",link="{link}",'
            f'peer="leaf1:Ethernet0",port="Ethernet0"}} 2.0') in text
    assert ('labtest_doctor_link_health{device="leaf2",link="leaf2:Ethernet0--spine1:Ethernet8",'
            'peer="spine1:Ethernet8",port="Ethernet0"} 0.0') in text
    assert f'labtest_doctor_suspect_confidence{{kind="link",rank="1",unit="{link}"}} 0.9' in text
    out = tmp_path / "doctor.prom"
    metrics.write(out)
    assert out.read_bytes() == metrics.text()
