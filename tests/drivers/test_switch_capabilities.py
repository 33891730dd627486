"""The Switch capability contract: runtime-checkable Protocols and the issue-5 JSON shapes."""

from __future__ import annotations

from labtest.capabilities.switch import (
    Facts,
    FecHistogram,
    InterfaceCounters,
    Interfaces,
    LldpNeighbor,
    PfcCounters,
    PfcQueues,
    PortAdmin,
    SwitchFacts,
    missing,
)
from labtest.parsing import to_jsonable


class FactsOnly:
    def facts(self) -> Facts:
        return Facts(vendor="Acme", model="X1", os_version="1.0", serial=None)


class AdminAndInterfaces(FactsOnly):
    def interfaces(self):
        return {}

    def counters(self):
        return {}

    def set_admin(self, port: str, up: bool) -> None:
        pass


def test_a_driver_offers_only_the_capabilities_it_implements():
    assert isinstance(FactsOnly(), SwitchFacts)
    assert not isinstance(FactsOnly(), Interfaces)
    assert missing(FactsOnly(), SwitchFacts, Interfaces, PortAdmin) == ["Interfaces", "PortAdmin"]
    assert missing(AdminAndInterfaces(), SwitchFacts, Interfaces, PortAdmin) == []
    assert missing(AdminAndInterfaces(), PfcQueues) == ["PfcQueues"]


def test_issue5_json_shapes():
    pfc = to_jsonable({"Ethernet0": PfcCounters(rx=[0, 0, 0, 7, 0, 0, 0, 0], tx=[0] * 8)})
    assert pfc["Ethernet0"]["rx"][3] == 7 and len(pfc["Ethernet0"]["tx"]) == 8
    lldp = to_jsonable({"Ethernet0": LldpNeighbor(remote_system="spine1", remote_port="Et1")})
    assert (
        lldp["Ethernet0"]["remote_system"] == "spine1" and lldp["Ethernet0"]["remote_port"] == "Et1"
    )
    hist = to_jsonable({"Ethernet0": FecHistogram(bins=[10, 2, 0])})
    assert hist["Ethernet0"]["bins"] == [10, 2, 0]
    counters = to_jsonable({"Ethernet0": InterfaceCounters(rx_packets=5, tx_discards=0)})
    keys = {"rx_packets", "rx_errors", "rx_discards", "tx_packets", "tx_errors", "tx_discards"}
    assert keys <= set(counters["Ethernet0"]) and counters["Ethernet0"]["rx_errors"] is None


def test_histogram_max_nonzero_bin():
    assert FecHistogram(bins=[9, 3, 0, 1, 0]).max_nonzero_bin == 3
    assert FecHistogram(bins=[0, 0]).max_nonzero_bin is None


def test_fec_capability_is_split_into_counters_and_histogram() -> None:
    """EOS publishes FEC counters but no codeword histogram: it offers FecCounters, not
    FecCodewordHistogram, hence not Fec (both); SONiC offers all three; NX-OS none."""
    from labtest.capabilities.switch import Fec, FecCodewordHistogram, FecCounters
    from labtest.registry import capabilities_of, driver_class, provides

    class CountersOnly:
        def fec_stats(self) -> dict:
            return {}

    class Both(CountersOnly):
        def fec_histogram(self, port: str) -> FecHistogram:
            return FecHistogram(bins=[])

    assert isinstance(CountersOnly(), FecCounters) and not isinstance(CountersOnly(), Fec)
    assert isinstance(Both(), Fec) and isinstance(Both(), FecCodewordHistogram)
    assert provides(Both, Fec) and not provides(CountersOnly, Fec)
    fec = {"Fec", "FecCounters", "FecCodewordHistogram"}
    assert fec <= set(capabilities_of(driver_class("sonic")))
    assert fec & set(capabilities_of(driver_class("eos"))) == {"FecCounters"}
    assert not fec & set(capabilities_of(driver_class("nxos")))
    assert not fec & set(capabilities_of(driver_class("snmp-switch")))
