"""EOS ports report their MTU (from ``show interfaces | json``; the status table has none)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest.drivers.eos.parsers import parse_interface_mtus
from labtest.errors import ParseError

SAMPLES = Path(__file__).parent / "samples" / "eos"


def test_reads_each_ports_mtu_from_a_real_capture() -> None:
    text = (SAMPLES / "show_interfaces_json__veoslab_4_33.txt").read_text()
    mtus = parse_interface_mtus(text)
    assert mtus and all(v > 0 for v in mtus.values())
    assert set(mtus.values()) <= {1500, 9214}  # the two MTUs the capture shows


@pytest.mark.parametrize("text, why", [
    ('{"interfaces": {"Ethernet1": {"mtu": "big"}}}\n', "expected a number"),
    ('{"interfaces": {"Ethernet1": {"mtu": 0}}}\n', "not a positive number"),
    ('{"interfaceStatuses": {}}\n', "interfaces"),
    ("Ethernet1 is up\n", "expected JSON"),
])
def test_refuses_what_it_cannot_read(text: str, why: str) -> None:
    with pytest.raises(ParseError, match=why):
        parse_interface_mtus(text)
