"""Units from inventory: serials (entered ones checked), EOS lane ports, PRBS or mission links,
and the operator's view (log lines, live panel)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from burnin_helpers import LIMITS

from labtest.burnin.live import Status
from labtest.burnin.progress import LivePanel, LogLines
from labtest.burnin.station import load_station
from labtest.burnin.store import Event
from labtest.burnin.units import discover, module_of
from labtest.capabilities.switch import Facts, PrbsResult
from labtest.capabilities.transceiver import LaneDom, Transceiver
from labtest.errors import ConfigError
from labtest.lab import Lab
from labtest.registry import register_driver
from labtest.testbed import load_testbed

SERIALS = {"sw1": "SW-1", "sw2": None}


class FakeSwitch:
    def __init__(self, name: str, device: object, testbed: object) -> None:
        self.name = name

    def close(self) -> None:
        pass

    def facts(self) -> Facts:
        return Facts("V", "M", "1", SERIALS[self.name])

    def transceivers(self) -> dict[str, Transceiver]:
        serial = None if self.name == "sw2" else "MOD-1"
        return {"Ethernet0": Transceiver(45.0, 3.3, [LaneDom(1, 50, 1, 0)], serial=serial)}


class FakePrbsSwitch(FakeSwitch):
    def prbs_start(self, port: str, pattern: str, lanes: list[int] | None = None) -> None: ...

    def prbs_stop(self, port: str) -> None: ...

    def prbs_read(self, port: str) -> list[PrbsResult]:
        return []


def _station(tmp_path: Path, **units: object) -> tuple:
    register_driver("burnin-fake", FakeSwitch)
    register_driver("burnin-fake-prbs", FakePrbsSwitch)
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump({"name": "tb", "devices": {
        "sw1": {"role": "leaf", "driver": "burnin-fake-prbs"},
        "sw2": {"role": "leaf", "driver": "burnin-fake"}},
        "links": [{"a": "sw1:Ethernet0", "b": "sw2:Ethernet0"}]}))
    st = tmp_path / "st.yaml"
    st.write_text(yaml.safe_dump({"station": "s", "testbed": str(tb), "limits": str(LIMITS),
                                  "duration_h": 1, "units": {"devices": ["sw1", "sw2"], **units},
                                  "load": {"kind": "prbs"}}))
    station = load_station(st)
    return station, Lab(load_testbed(tb))


def test_missing_serials_are_named_and_entered_ones_fill_in(tmp_path: Path) -> None:
    station, lab = _station(tmp_path)
    with pytest.raises(ConfigError) as err:
        discover(lab, station)
    assert err.value.problems == [
        "sw2: inventory reports no serial; enter it under units.serials",
        "sw2:Ethernet0: the module reports no serial; enter it under units.serials",
    ]
    station, lab = _station(tmp_path, serials={"sw2": "SW-2", "sw2:Ethernet0": "MOD-2"})
    plan = discover(lab, station)
    assert {(u.serial, u.kind) for u in plan.units} == {
        ("SW-1", "switch"), ("SW-2", "switch"), ("MOD-1", "module"), ("MOD-2", "module")}
    assert plan.prbs_links == []  # sw2 has no PRBS: the link stays in mission mode
    assert plan.notes == ["sw1:Ethernet0--sw2:Ethernet0: mission mode (no PRBS on sw2); "
                          "judged on FEC"]


def test_a_serial_that_disagrees_with_inventory_stops_the_run(tmp_path: Path) -> None:
    station, lab = _station(tmp_path, serials={"sw1": "SW-9", "sw2": "SW-2",
                                               "sw2:Ethernet0": "MOD-1"})
    with pytest.raises(ConfigError) as err:
        discover(lab, station)
    text = "\n".join(err.value.problems)
    assert "sw1: inventory serial 'SW-1' differs from the station's 'SW-9'" in text
    assert "serial 'MOD-1' appears at sw1:Ethernet0 and sw2:Ethernet0" in text


def test_eos_lane_ports_are_one_module() -> None:
    lanes = {f"Ethernet1/{i}": Transceiver(45.0, 3.3, [LaneDom(1, 50 + i, 1, 0)], serial="S")
             for i in range(1, 5)}
    lanes["Ethernet2/1"] = Transceiver(45.0, 3.3, [LaneDom(1, 60, 1, 0)], serial="T")
    module = module_of(lanes, "Ethernet1/1", {"Ethernet1/1", "Ethernet2/1"})
    assert module is not None
    assert [(lane.lane, lane.tx_bias_ma) for lane in module.lanes] == [
        (1, 51), (2, 52), (3, 53), (4, 54)]
    breakout = module_of(lanes, "Ethernet1/1", {"Ethernet1/1", "Ethernet1/2"})
    assert breakout is not None and len(breakout.lanes) == 3  # a cabled sibling is its own port


def test_the_operator_sees_progress_and_alarms() -> None:
    st = Status("run-1", "st", t_s=5400.0, duration_s=7200.0, phase="soak 40 C",
                readings_done=10, readings_total=20, samples=500, units=4,
                alarmed={"SN1": "hot"}, chamber_c=39.9)
    st.latest.append("   1.50 h  SN1: sw1:Ethernet0: temperature_c 75.00 degC outside ...")
    buf = io.StringIO()
    log = LogLines(buf, interval_s=0.0)
    log.update(st)
    log.event(st, Event(5400.0, 0.0, "alarm", "SN1: too hot", "SN1"))
    text = buf.getvalue()
    assert "1:30/2:00 h ( 75.0 %) [soak 40 C] chamber 39.9 C readings 10/20" in text
    assert "units with alarms 1/4" in text and "alarm: SN1: too hot" in text
    panel = LivePanel()
    panel.console.file = io.StringIO()
    panel.update(st, force=True)
    panel.close(st)
    shown = panel.console.file.getvalue()
    assert "0:30 h left" in shown and "1 with alarms" in shown and "temperature_c 75.00" in shown
