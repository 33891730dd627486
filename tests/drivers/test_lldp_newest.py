"""LLDP truth (issue 14 case 4): a port whose table still holds its old neighbour after a
re-cabling. Every driver keeps the newest row and names the others; where the output has
no age, the first row is kept and the others are still named (the cabling suite re-reads)."""

from __future__ import annotations

from labtest.capabilities.switch import LldpNeighbor
from labtest.drivers.common.lldp import newest_per_port
from labtest.parsing import lookup


def _n(system: str, port: str) -> LldpNeighbor:
    return LldpNeighbor(remote_system=system, remote_port=port)


def test_largest_freshness_wins_ties_keep_the_device_order() -> None:
    got = newest_per_port([
        ("Et1", _n("old", "p1"), 100), ("Et1", _n("new", "p9"), 5000),
        ("Et2", _n("a", "p2"), 7), ("Et2", _n("b", "p3"), 7),
        ("Et3", _n("same", "p4"), 1), ("Et3", _n("same", "p4"), 2),
    ])
    assert (got["Et1"].remote_system, got["Et1"].older_neighbours) == ("new", ("old:p1",))
    assert (got["Et2"].remote_system, got["Et2"].older_neighbours) == ("a", ("b:p3",))
    assert got["Et3"].older_neighbours == ()  # the same neighbour twice is no change


def test_unknown_freshness_keeps_the_first_and_names_the_rest() -> None:
    got = newest_per_port([("e", _n("x", "1"), None), ("e", _n("y", "2"), 9)])
    assert (got["e"].remote_system, got["e"].older_neighbours) == ("x", ("y:2",))


EOS_TEXT = """Port       Neighbor Device ID               Neighbor Port ID           TTL
Et1        spine1                           Ethernet1/1                31
Et1        spine9                           Ethernet7/1                118
Et2        spine2                           Ethernet1/2                120
"""


def test_eos_text_prefers_the_most_ttl_left() -> None:
    got = lookup("eos", "show lldp neighbors")(EOS_TEXT, device="leaf3")
    assert (got["Ethernet1"].remote_system, got["Ethernet1"].remote_port) == (
        "spine9", "Ethernet7/1")
    assert got["Ethernet1"].older_neighbours == ("spine1:Ethernet1/1",)
    assert got["Ethernet2"].older_neighbours == ()


EOS_DETAIL = """{"lldpNeighbors": {"Ethernet1": {"lldpNeighborInfo": [
  {"systemName": "spine1", "chassisId": "001c.7300.0001", "ttl": 120,
   "lastContactTime": 1700000100.5,
   "neighborInterfaceInfo": {"interfaceId": "\\"Ethernet1/1\\""}},
  {"systemName": "spine9", "chassisId": "001c.7300.0009", "ttl": 120,
   "lastContactTime": 1700000190.0,
   "neighborInterfaceInfo": {"interfaceId": "\\"Ethernet7/1\\""}}]}}}
"""


def test_eos_detail_json_prefers_the_latest_contact() -> None:
    got = lookup("eos", "show lldp neighbors detail")(EOS_DETAIL, device="leaf3")
    assert (got["Ethernet1"].remote_system, got["Ethernet1"].remote_port) == (
        "spine9", "Ethernet7/1")
    assert got["Ethernet1"].older_neighbours == ("spine1:Ethernet1/1",)


SONIC_TABLE = """Capability codes: (R) Router, (B) Bridge, (O) Other
LocalPort    RemoteDevice    RemotePortID    Capability    RemotePortDescr
-----------  --------------  --------------  ------------  -----------------
Ethernet0    spine1          Ethernet0       BR            to leaf1
Ethernet0    spine7          Ethernet4       BR            to leaf9
Ethernet8    spine2          Ethernet1/1     BR            to leaf1
--------------------------------------------------
Total entries displayed:  3
"""


def test_sonic_table_with_two_neighbours_on_a_port_names_both() -> None:
    got = lookup("sonic", "show lldp table")(SONIC_TABLE, device="leaf1")
    assert got["Ethernet0"].remote_system == "spine1"  # no age printed: the first row
    assert got["Ethernet0"].older_neighbours == ("spine7:Ethernet4",)
    assert got["Ethernet8"].older_neighbours == ()
