"""A switch that was late reads lean: what moves, twice as often.

Issue 34's onset evaluation: the noise's late switch (each command up to 10 s late) read
whole every 80-100 s, and a counter's rate needs two reads, so a straggler host link or a
marginal lane only that switch saw waited minutes. Its next reads are lean (the physical
layer, the counters and its clock); its link states, LLDP and sessions are its last whole
read's, and every ``LEAN_READS + 1``-th read is whole again.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from labtest.doctor.evidence import CARRIED, PortReading, Snapshot, read_switch
from labtest.doctor.judge import Plan
from labtest.doctor.service import LEAN_READS, Doctor
from labtest.emulation.lab import EmulatedLab
from labtest.lab import Lab
from labtest.measure import load_limits
from labtest.run import default_testbed
from labtest.testbed import load_testbed
from labtest.testbed.model import FaultSpec, Noise

#: what a lean read must not ask: the watch's link states, LLDP, routing sessions
SLOW_PARTS = {"interfaces", "lldp_neighbors", "bgp_sessions", "bfd_sessions"}


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    em = EmulatedLab(load_testbed(default_testbed()))
    drivers = Lab(em.start())
    try:
        yield drivers
    finally:
        drivers.close()
        em.stop()


@contextlib.contextmanager
def _asked(driver: Any) -> Iterator[set[str]]:
    """The names of ``driver``'s public methods called in the block (its class, and so
    the capabilities it offers, unchanged)."""
    asked: set[str] = set()
    names = [n for n in dir(type(driver))
             if not n.startswith("_") and callable(getattr(type(driver), n))]

    def recording(name: str) -> Any:
        method = getattr(driver, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            asked.add(name)
            return method(*args, **kwargs)
        return call

    for name in names:
        setattr(driver, name, recording(name))
    try:
        yield asked
    finally:
        for name in names:
            delattr(driver, name)


@pytest.mark.parametrize("switch", ["leaf1", "spine2", "leaf4"])  # SONiC, EOS, NX-OS
def test_a_lean_read_asks_for_what_moves_and_nothing_else(lab: Lab, switch: str) -> None:
    drv = lab.device(switch)
    with _asked(drv) as whole_asked:
        whole, _ = read_switch(drv, switch, 0.0, 0.05)
    with _asked(drv) as lean_asked:
        lean, missing = read_switch(drv, switch, 0.0, 0.05, lean=True)
    assert SLOW_PARTS & whole_asked and not SLOW_PARTS & lean_asked, lean_asked
    assert len(lean_asked) < len(whole_asked)
    assert set(lean) == set(whole) and all(r.lean for r in lean.values())
    for name, r in lean.items():  # the counters and the physical layer: all there
        assert set(r.counters) == set(whole[name].counters), name
        assert (r.pre_fec_ber is None) == (whole[name].pre_fec_ber is None)
        assert r.oper_up is None and r.speed_gbps is None  # not read: carried later
    assert "lean read of a late switch" in missing[f"{switch} link state, LLDP and sessions"]


def _reading(device: str, t: float, lean: bool, **kw: Any) -> PortReading:
    return PortReading(device, "Ethernet0", t, lean=lean, counters={"tx_packets": int(t)}, **kw)


def test_a_slow_switch_reads_lean_then_whole_and_carries_what_it_did_not_read() -> None:
    tb = load_testbed(default_testbed())
    doctor = Doctor(Plan.of(tb), load_limits(tb.limits))  # type: ignore[arg-type]
    assert not doctor._lean_read("leaf1")  # never late: whole
    doctor._lean["leaf1"] = 0  # named late by a round (``interval``)
    reads = [doctor._lean_read("leaf1") for _ in range(2 * (LEAN_READS + 1))]
    assert reads == ([True] * LEAN_READS + [False]) * 2
    whole = _reading("leaf1", 0.0, False, oper_up=False, speed_gbps=400.0, mtu_bytes=9100,
                     neighbour="spine1:Ethernet0", bgp_down=("10.0.0.1",))
    doctor.step(Snapshot(ports={whole.name: whole}, services_down={"leaf1": "bgpd is dead"}))
    lean = _reading("leaf1", 10.0, True)
    doctor.step(Snapshot(ports={lean.name: lean}))
    assert doctor.prev is not None
    kept = doctor.prev.ports[lean.name]
    assert kept.counters == lean.counters and kept.time_s == 10.0  # its own counters
    assert {f: getattr(kept, f) for f in CARRIED} == {f: getattr(whole, f) for f in CARRIED}
    assert doctor.prev.services_down == {"leaf1": "bgpd is dead"}  # a lean read asks none
    # the next whole read says the daemon is back: no longer carried
    doctor.step(Snapshot(ports={whole.name: replace(whole, time_s=20.0)}))
    doctor.step(Snapshot(ports={lean.name: replace(lean, time_s=30.0)}))
    assert doctor.prev.services_down == {}


def test_a_straggler_only_the_late_leaf_sees_is_paged_from_its_lean_reads() -> None:
    """Under a job's load, a host link at a drawn fraction of its rate behind the late leaf:
    the host's NIC marks nothing (its egress is no marking queue); the leaf's queue towards
    the host does, read by the leaf's lean reads."""
    rng = random.Random(20261209)
    tb = load_testbed(default_testbed())
    assert tb.emulation is not None
    late = rng.choice(sorted(tb.by_role("leaf")))
    host_port = rng.choice([str(e) for lk in tb.links_of(late) for e in lk.ends
                            if tb.devices[e.device].role == "host"])
    fault = FaultSpec(kind="straggler_link", target=host_port,
                      params={"rate_fraction": round(rng.uniform(0.5, 0.7), 2)})
    noisy = tb.model_copy(update={"emulation": tb.emulation.model_copy(
        update={"noise": Noise(answer_delay_s={late: 60.0}), "faults": [fault]})})
    em = EmulatedLab(noisy)
    drivers = Lab(em.start())
    hosts = sorted(tb.by_role("host"))
    for i, h in enumerate(hosts):  # labtest doctor --load's job
        for step in (2, 4, 6):
            em.fabric.traffic.start_roce(h, hosts[(i + step) % len(hosts)], qps=2)
    try:
        doctor = Doctor(Plan.of(drivers.testbed), load_limits(em.testbed.limits),  # type: ignore[arg-type]
                        prober=lambda: [], scale=noisy.emulation.time_scale)  # type: ignore[union-attr]
        reports = []
        for _ in range(14):
            reports.append(doctor.interval(drivers, watch_s=0.2, poll_s=0.05))
            if any(s.unit == doctor.plan.unit(host_port) for s in reports[-1].suspects):
                break
        assert doctor.prev is not None
        leaf_port = doctor.plan.peer(host_port)
        paged = next((s for s in reports[-1].suspects
                      if s.unit == doctor.plan.unit(host_port)), None)
        assert paged is not None, (fault, [r.text() for r in reports])
        assert any(late in r.late for r in reports)  # it was late, then read lean
        assert any(e.where == leaf_port and e.metric == "bottleneck_rate"
                   for e in paged.evidence), paged.evidence
        assert doctor.prev.ports[leaf_port].lean, "paged from a whole read, not a lean one"
    finally:
        drivers.close()
        em.stop()
