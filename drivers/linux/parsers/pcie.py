"""A NIC's PCIe link status from sysfs: ``current_link_{speed,width}`` against
``max_link_{speed,width}`` and the device's ``uevent`` (its PCI address).

The driver reads them with one ``grep -H .`` in ``/sys/class/net/IF/device``;
lines are ``FILE:VALUE`` (``FILE: VALUE`` and a leading path are accepted, as
probe scripts print them). Speeds are what the kernel's ``pci_speed_string()``
prints: ``32.0 GT/s PCIe`` since Linux 5.4, ``8 GT/s`` before, ``Unknown`` for
a link that did not train; widths are lane counts (0: no link).
"""

from __future__ import annotations

import re

from labtest.capabilities.host import PcieLink
from labtest.drivers.linux.parsers._common import parse_error
from labtest.parsing import parser

_FIELDS = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
_LINE = re.compile(
    r"^(?:.*[/\s])?(?P<key>current_link_speed|current_link_width|max_link_speed|max_link_width)"
    r"\s*:\s*(?P<value>.*?)\s*$"
)
_SLOT = re.compile(r"PCI_SLOT_NAME=(?P<bdf>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_SPEED = re.compile(r"^(?P<gts>\d+(?:\.\d+)?) ?GT/s(?: PCIe)?$")


@parser(
    "linux", "grep -H . current_link_speed current_link_width max_link_speed max_link_width uevent"
)
def parse_pcie_sysfs(text: str) -> PcieLink:
    values: dict[str, str] = {}
    address = None
    for n, line in enumerate(text.splitlines(), 1):
        if m := _SLOT.search(line):
            address = m.group("bdf").lower()
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        key, value = m.group("key"), m.group("value")
        if key in values and values[key] != value:
            raise parse_error(f"{key} given twice ({values[key]!r}, {value!r})", text, line=n)
        values[key] = value
    last = text.rstrip("\r\n").rsplit("\n", 1)[-1]
    if text and not text.endswith(("\n", "\r")) and (_LINE.match(last) or _SLOT.search(last)):
        raise parse_error(  # "16" cut to "1" would read as one lane
            "the last line has no line end: the capture looks cut", text, line=text.count("\n") + 1
        )
    missing = [f for f in _FIELDS if f not in values]
    if missing:
        raise parse_error(
            f"no {', '.join(missing)} in the PCIe link status", text, expected=", ".join(_FIELDS)
        )
    return PcieLink(
        address=address,
        speed_gts=_speed(values["current_link_speed"], text),
        width_lanes=_width(values["current_link_width"], text),
        max_speed_gts=_speed(values["max_link_speed"], text),
        max_width_lanes=_width(values["max_link_width"], text),
    )


def _speed(value: str, text: str) -> float | None:
    if value.startswith("Unknown"):
        return None  # "Unknown" (5.4+) or "Unknown speed" (older): no link trained
    m = _SPEED.match(value)
    if m is None:
        raise parse_error(f"PCIe link speed {value!r}", text, expected="e.g. '32.0 GT/s PCIe'")
    return float(m.group("gts"))


def _width(value: str, text: str) -> int | None:
    if not value.isdigit():
        raise parse_error(f"PCIe link width {value!r}", text, expected="a lane count")
    lanes = int(value)
    return lanes or None  # 0: no link trained
