"""A switch whose control plane answers late does not hold the doctor's rounds.

Issue 34's noise evaluation: one switch answering each command up to 10 s late stretched
every round to its serial reads (98 s of device time instead of 25 s), and ``--once``
ended undecided. Its read now goes on in the background; the round names it late (never
unreachable, never paged for it) and judges its readings in the interval they arrive in.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from labtest.cli import main
from labtest.doctor.judge import Plan
from labtest.doctor.service import Doctor
from labtest.emulation.lab import EmulatedLab
from labtest.lab import Lab
from labtest.matrix.cases import Case, faulted_testbed
from labtest.measure import load_limits
from labtest.run import default_testbed
from labtest.testbed import load_testbed
from labtest.testbed.model import FaultSpec, Noise

LATE = "leaf1"


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[EmulatedLab, Lab]]:
    tb = load_testbed(default_testbed())
    assert tb.emulation is not None
    noisy = tb.model_copy(update={"emulation": tb.emulation.model_copy(
        update={"noise": Noise(answer_delay_s={LATE: 60.0})})})
    em = EmulatedLab(noisy)
    drivers = Lab(em.start())
    try:
        yield em, drivers
    finally:
        drivers.close()
        em.stop()


@contextlib.contextmanager
def _late_lab(late: str, fault: FaultSpec) -> Iterator[tuple[Lab, Doctor]]:
    """The default emulated lab with ``fault``, ``late`` answering each command up to 60 s
    of device time late, and a doctor without the probe mesh."""
    tb = load_testbed(default_testbed())
    assert tb.emulation is not None
    noisy = tb.model_copy(update={"emulation": tb.emulation.model_copy(
        update={"noise": Noise(answer_delay_s={late: 60.0}), "faults": [fault]})})
    em = EmulatedLab(noisy)
    drivers = Lab(em.start())
    try:
        yield drivers, Doctor(Plan.of(drivers.testbed), load_limits(em.testbed.limits),  # type: ignore[arg-type]
                              prober=lambda: [], scale=em.testbed.emulation.time_scale)  # type: ignore[union-attr]
    finally:
        drivers.close()
        em.stop()


def test_a_late_switch_is_named_late_and_judged_when_its_read_arrives(
        lab: tuple[EmulatedLab, Lab]) -> None:
    em, drivers = lab
    scale = em.testbed.emulation.time_scale  # type: ignore[union-attr]
    doctor = Doctor(Plan.of(drivers.testbed), load_limits(em.testbed.limits),  # type: ignore[arg-type]
                    scale=scale)
    first = doctor.interval(drivers, watch_s=0.2, poll_s=0.05)
    # the round did not wait for it (its read alone takes ~10 commands x 0..6 s of wall)
    assert LATE in first.late, first.text()
    assert f"{LATE} readings" in first.not_observed, first.not_observed
    assert LATE not in first.failed and first.suspects == [], first.text()
    assert first.unread == [LATE]  # no healthy decision before its first reading
    assert not any(r.device == LATE for r in (doctor.prev.ports.values() if doctor.prev
                                              else ())), "a late read was judged early"
    arrived = None
    for _ in range(40):
        report = doctor.interval(drivers, watch_s=0.2, poll_s=0.05)
        assert LATE not in report.failed and report.suspects == [], report.text()
        if LATE not in report.late:
            arrived = report
            break
    assert arrived is not None, "the late switch's read never arrived"
    assert doctor.prev is not None
    assert any(r.device == LATE for r in doctor.prev.ports.values())
    later = doctor.interval(drivers, watch_s=0.2, poll_s=0.05)
    assert later.unread == [], later.unread  # late again perhaps, but read: not unread


def test_a_host_link_flapping_behind_a_late_switch_is_paged_from_the_host_end() -> None:
    """Issue 34's noise evaluation missed ``flapping_link@host1:eth0--leaf1:Ethernet16``
    when leaf1 was the late switch: its link counter was never read in the bound, and the
    probes crossed no dark moment. The host's own carrier changes (``ip -s -s``) see it."""
    flap = FaultSpec(kind="flapping_link", target="host1:eth0--leaf1:Ethernet16",
                     params={"down_s": 0.5, "period_s": 3.0})
    with _late_lab(LATE, flap) as (drivers, doctor):
        reports = [doctor.interval(drivers, watch_s=0.2, poll_s=0.05) for _ in range(3)]
    assert all(LATE in r.late for r in reports), [r.late for r in reports]  # never read
    paged = [r for r in reports if r.suspects]
    assert paged, reports[-1].text()
    assert all(r.suspects[0].unit == "host1:eth0--leaf1:Ethernet16" for r in paged), \
        paged[0].text()
    # a read may also land in a dark moment (link oper down); the count sees the flaps
    # between reads, in some interval after the first
    assert any(e.where == "host1:eth0" and "link status changes" in e.text
               for r in paged for e in r.suspects[0].evidence), [r.text() for r in paged]


@pytest.mark.parametrize(("late", "seed"), [("spine2", 20261219),  # an EOS switch
                                           ("leaf1", 20261220)])  # a SONiC one
def test_once_waits_past_its_bound_for_a_late_switch_read_in_flight(
        late: str, seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34's evaluation, seed 20261219 case 15: a marginal lane on the switch whose
    read took 83 s ended ``--once`` undecided at its 60 s bound, "spine2 late and never
    read". The read was on its way: ``--once`` now awaits it (no new rounds' worth of
    reasons: only a read in flight) and says it went past the bound. The fault here is one
    only the rest of the read shows (a port MTU below the RoCE frame's, bursts off: they
    would die on it): a marginal lane's FEC is read first and paged early (next test)."""
    rng = random.Random(seed)
    path = faulted_testbed(Path(default_testbed()), Case(name="late"), tmp_path / "late.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["emulation"]["noise"] = {"answer_delay_s": {late: 25.0}}  # ~200 s a read, bound 30
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    tb = load_testbed(path)
    link = rng.choice([lk for lk in tb.links_of(late)
                       if all(tb.devices[e.device].role != "host" for e in lk.ends)])
    port = next(str(e) for e in link.ends if e.device == late)
    fault = f"mtu_mismatch@{port}:mtu={rng.choice([1500, 2000, 3000])}"
    rc = main(["doctor", "--once", "--testbed", str(path), "--interval", "1", "--max-s", "30",
               "--bursts", "0", "--fault", fault])
    out = capsys.readouterr().out
    assert rc == 1 and f"  1. link {link.name} " in out, (fault, out)
    assert f"past the bound --max-s 30 for {late}'s read in flight" in out, out


@pytest.mark.parametrize(("late", "seed"), [("leaf1", 20261207),  # a SONiC switch
                                           ("spine2", 20261208)])  # an EOS one
def test_a_late_switch_is_judged_on_its_physical_layer_while_the_rest_of_its_read_runs(
        late: str, seed: int) -> None:
    """Issue 34's evaluation, seed 20261220: dirty connectors only the late switch's
    receivers showed waited 60-120 s for its whole read (about ten answers, each up to 10 s
    late). Its FEC and DOM come first and are judged as soon as they have arrived: the link
    is paged while the switch's read is still running (unread), not after it lands."""
    rng = random.Random(seed)
    tb = load_testbed(default_testbed())
    link = rng.choice([lk for lk in tb.links_of(late)
                       if all(tb.devices[e.device].role != "host" for e in lk.ends)])
    port = next(str(e) for e in link.ends if e.device == late)
    dirty = FaultSpec(kind="dirty_connector", target=port,
                      params={"direction": "rx", "loss_db": round(rng.uniform(2.8, 3.2), 2)})
    reports = []
    with _late_lab(late, dirty) as (drivers, doctor):
        for _ in range(12):
            reports.append(doctor.interval(drivers, watch_s=0.2, poll_s=0.05))
            if reports[-1].suspects:
                break
    paged = reports[-1]
    assert paged.suspects, [r.text() for r in reports]
    assert paged.suspects[0].unit == link.name, (dirty, paged.text())
    assert late in paged.unread, (  # the page came from its levels, its read still running
        f"paged only once {late}'s whole read arrived", [r.late for r in reports])
    assert any(e.where == port for e in paged.suspects[0].evidence), paged.text()
