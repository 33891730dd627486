"""Retired flows (stopped, out of the engine) leave the traffic model's live set: its
steps then scan what runs, not the run's history. The counters must not change."""

from __future__ import annotations

import numpy as np
import pytest

from labtest.emulation.model.traffic import TrafficModel
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed


def _history(retire: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, int]:
    tb = clos_testbed(spines=2, leaves=4, hosts_per_leaf=2, speed_gbps=400.0)
    m = TrafficModel(tb, DictLinkView.of(tb), np.random.default_rng(3))
    if not retire:
        monkeypatch.setattr(m, "_retire", lambda: None)
    for round_ in range(6):  # short runs one after another, an incast among them
        senders = range(2, 9) if round_ == 3 else (2 + round_, 3 + round_)
        for h in senders:
            m.start_roce(f"host{h}", "host1", qps=2, duration_s=0.002)
        m.advance(0.003)
    storm = m.start_pfc_storm("host5:eth0")
    m.start_roce("host6", "host5", qps=1, duration_s=0.002)
    m.advance(0.003)
    storm()
    m.advance(0.002)
    ports = [m.port_counters(p.endpoint) for p in m.topo.ports]
    flows = [(f.tx_frames, f.rx_frames, f.drop_frames) for f in m.flows.values()]
    return [ports, flows], len(m._live)


def test_retiring_finished_flows_changes_no_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, live_kept = _history(False, monkeypatch)
    monkeypatch.undo()
    retired, live_retired = _history(True, monkeypatch)
    assert retired == kept
    assert live_retired < live_kept  # the live set really shrank (not a no-op)
