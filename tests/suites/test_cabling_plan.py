"""The cabling comparison (suites/cabling): missing, swapped, unexpected, unplanned,
speed and FEC mismatches, on hand-made observations."""

from __future__ import annotations

from cabling_lib import (
    MISSING,
    OK,
    SWAPPED,
    UNEXPECTED,
    check_plan,
    normalise,
    speed_fec_mismatches,
    unplanned_neighbours,
)

from labtest.capabilities.switch import InterfaceStatus
from labtest.testbed.model import Link

PLAN = [
    Link(a="leaf1:Ethernet0", b="spine1:Ethernet0", speed_gbps=400),
    Link(a="leaf2:Ethernet0", b="spine1:Ethernet8", speed_gbps=400),
    Link(a="host1:eth0", b="leaf1:Ethernet16", speed_gbps=400),
]
LLDP = {"leaf1", "leaf2", "spine1"}  # hosts speak no LLDP here
AS_PLANNED = {
    "leaf1:Ethernet0": "spine1:Ethernet0", "spine1:Ethernet0": "leaf1:Ethernet0",
    "leaf2:Ethernet0": "spine1:Ethernet8", "spine1:Ethernet8": "leaf2:Ethernet0",
    "leaf1:Ethernet16": "host1:eth0",
}


def _status(report: dict, link: str) -> list[tuple[str, str]]:
    return [(c.end, c.status) for c in report[link]]


def test_as_planned_is_all_ok_and_hosts_are_checked_from_the_switch() -> None:
    report = check_plan(PLAN, AS_PLANNED, LLDP)
    assert all(c.status == OK for checks in report.values() for c in checks)
    assert _status(report, "host1:eth0--leaf1:Ethernet16") == [("leaf1:Ethernet16", OK)]


def test_swapped_far_ends_name_both_links() -> None:
    heard = dict(AS_PLANNED)
    heard["leaf1:Ethernet0"], heard["leaf2:Ethernet0"] = "spine1:Ethernet8", "spine1:Ethernet0"
    heard["spine1:Ethernet0"], heard["spine1:Ethernet8"] = "leaf2:Ethernet0", "leaf1:Ethernet0"
    report = check_plan(PLAN, heard, LLDP)
    checks = report["leaf1:Ethernet0--spine1:Ethernet0"]
    assert [c.status for c in checks] == [SWAPPED, SWAPPED]
    detail = checks[0].detail
    assert "leaf1:Ethernet0 hears spine1:Ethernet8" in detail
    assert "leaf2:Ethernet0--spine1:Ethernet8" in detail and "expected spine1:Ethernet0" in detail


def test_missing_and_unexpected() -> None:
    heard = dict(AS_PLANNED)
    heard["leaf1:Ethernet0"] = None
    heard["spine1:Ethernet0"] = "rogue9:Ethernet1"
    report = check_plan(PLAN, heard, LLDP)
    checks = {c.end: c for c in report["leaf1:Ethernet0--spine1:Ethernet0"]}
    assert checks["leaf1:Ethernet0"].status == MISSING
    assert "hears no LLDP neighbour" in checks["leaf1:Ethernet0"].detail
    assert checks["spine1:Ethernet0"].status == UNEXPECTED
    assert "not in the cabling plan" in checks["spine1:Ethernet0"].detail


def test_names_compare_without_domain_case_or_abbreviation() -> None:
    assert normalise("Spine1.lab.example:Et1/1") == normalise("spine1:Ethernet1/1")
    heard = dict(AS_PLANNED, **{"leaf1:Ethernet0": "SPINE1.lab:Eth0"})
    report = check_plan(PLAN, heard, LLDP)
    assert report["leaf1:Ethernet0--spine1:Ethernet0"][0].status == OK


def test_neighbours_on_unplanned_ports() -> None:
    heard = dict(AS_PLANNED, **{"leaf1:Ethernet40": "leaf2:Ethernet40"})
    assert unplanned_neighbours(PLAN, heard, "leaf1") == {"leaf1:Ethernet40": "leaf2:Ethernet40"}
    assert unplanned_neighbours(PLAN, heard, "spine1") == {}


def _if(speed: float, fec: str | None) -> InterfaceStatus:
    return InterfaceStatus(name="x", admin_up=True, oper_up=True, speed_gbps=speed, fec=fec)


def test_speed_and_fec_mismatches() -> None:
    link = PLAN[0]
    same = {"leaf1:Ethernet0": _if(400, "rs"), "spine1:Ethernet0": _if(400, "RS")}
    assert speed_fec_mismatches(link, same) == []
    slow = {"leaf1:Ethernet0": _if(200, "rs"), "spine1:Ethernet0": _if(400, "none")}
    found = speed_fec_mismatches(link, slow)
    assert {m.what for m in found} == {"speed", "fec"}
    assert any("leaf1:Ethernet0 runs 200G" in m.detail for m in found)
    one_sided = {"leaf1:Ethernet0": _if(400, "rs"), "spine1:Ethernet0": _if(400, None)}
    assert speed_fec_mismatches(link, one_sided) == []  # FEC compared only where both report


# --- a table that still lists the old neighbour (issue 14 case 4) ---------------------------


class _LldpSwitch:
    """Answers a script of LLDP tables (the last repeats); no interface status."""

    def __init__(self, tables: list[dict]) -> None:
        self.tables, self.reads = tables, 0

    def lldp_neighbors(self) -> dict:
        table = self.tables[min(self.reads, len(self.tables) - 1)]
        self.reads += 1
        return table


class _Lab:
    def __init__(self, devices: dict) -> None:
        self.devices = devices

    def device(self, name: str) -> object:
        return self.devices[name]

    def names(self, capability: object = None) -> list[str]:
        return [n for n, d in self.devices.items() if isinstance(d, capability)]


def _nb(system: str, port: str, *older: str) -> object:
    from labtest.capabilities.switch import LldpNeighbor

    return LldpNeighbor(remote_system=system, remote_port=port, older_neighbours=older)


def test_a_changing_table_is_read_until_it_settles_or_left_changing() -> None:
    from cabling_lib import observe

    link = [Link(a="leaf1:Ethernet0", b="spine1:Ethernet0")]
    settling = _LldpSwitch([{"Ethernet0": _nb("spine1", "Ethernet0", "spine7:Ethernet4")},
                            {"Ethernet0": _nb("spine1", "Ethernet0")}])
    obs = observe(_Lab({"leaf1": settling}), link, 0.0, 0.01, 1.0, 0.01)
    assert settling.reads == 2 and obs.changing == {}
    assert obs.heard["leaf1:Ethernet0"] == "spine1:Ethernet0"
    stuck = _LldpSwitch([{"Ethernet0": _nb("spine1", "Ethernet0", "spine7:Ethernet4")}])
    obs = observe(_Lab({"leaf1": stuck}), link, 0.0, 0.01, 0.05, 0.01)
    assert stuck.reads >= 2 and obs.changing == {"leaf1:Ethernet0": ("spine7:Ethernet4",)}
    # the newest neighbour is judged: a swap fails at once, whatever the table still lists
    swapped = _LldpSwitch([{"Ethernet0": _nb("spine7", "Ethernet4", "spine1:Ethernet0")}])
    obs = observe(_Lab({"leaf1": swapped}), link, 0.0, 0.01, 0.0, 0.01)
    report = check_plan(link, obs.heard, {"leaf1"})
    assert [c.status for c in report[link[0].name]] == [UNEXPECTED]
