"""EOS LLDP neighbours, JSON and text; the newest entry per port wins."""

from __future__ import annotations

import re
from typing import Any

from labtest.capabilities.switch import (
    LldpNeighbor,
)
from labtest.drivers.common.lldp import newest_per_port
from labtest.drivers.eos.parsers._common import (
    _PROMPT,
    _as_json,
    _eos,
    _int,
    _own_key,
    _str,
    long_name,
)
from labtest.drivers.eos.parsers.interfaces import _PORT
from labtest.parsing import Garbled as _Garbled

# --- LLDP --------------------------------------------------------------------


def _unquote(value: Any) -> str | None:
    text = _str(value)
    return text.strip('"') if text else None


def _lldp_text(text: str) -> dict[str, LldpNeighbor]:
    lines = text.splitlines()
    header = next(
        (i for i, ln in enumerate(lines) if re.match(r"^Port\s+Neighbor Device", ln)), None
    )
    if header is None:
        raise _Garbled("no 'Port  Neighbor Device ID ...' header")
    rows: list[tuple[str, LldpNeighbor, int]] = []
    for number, row in enumerate(lines[header + 1 :], start=header + 2):
        if _PROMPT.match(row):
            break
        if not row.strip() or set(row.strip()) <= {"-", " "}:
            continue
        tokens = row.split()
        if len(tokens) < 4 or not tokens[-1].isdigit() or not _PORT.fullmatch(tokens[0]):
            raise _Garbled(
                f"LLDP row {row.strip()!r}",
                line=number,
                expected="PORT NEIGHBOR-DEVICE NEIGHBOR-PORT TTL",
            )
        rows.append(
            (
                long_name(tokens[0]),
                LldpNeighbor(
                    remote_system=" ".join(tokens[1:-2]),
                    remote_port=tokens[-2],
                    ttl_s=int(tokens[-1]),
                ),
                int(tokens[-1]),  # the TTL left: the newest neighbour has the most
            )
        )
    return newest_per_port(rows)


@_eos("show lldp neighbors", "show lldp neighbors detail")
def parse_lldp_neighbors(text: str) -> dict[str, LldpNeighbor]:
    doc = _as_json(text)
    if doc is None:
        return _lldp_text(text)
    _own_key(doc, "show lldp neighbors", "lldpNeighbors", list | dict)
    neighbors = doc["lldpNeighbors"]
    rows: list[tuple[str, LldpNeighbor, Any]] = []
    if isinstance(neighbors, list):  # "show lldp neighbors | json"
        for n in neighbors:
            ttl = _int(n.get("ttl"))
            neighbour = LldpNeighbor(
                remote_system=_str(n.get("neighborDevice")),
                remote_port=_unquote(n.get("neighborPort")),
                ttl_s=ttl,
            )
            rows.append((n["port"], neighbour, ttl))  # the TTL left: newest has the most
        return newest_per_port(rows)
    for port, entry in neighbors.items():  # "show lldp neighbors detail | json"
        for n in entry["lldpNeighborInfo"] or []:
            iface = n.get("neighborInterfaceInfo") or {}
            mgmt = n.get("managementAddresses") or []
            caps = [k for k, on in (n.get("systemCapabilities") or {}).items() if on]
            neighbour = LldpNeighbor(
                remote_system=_str(n.get("systemName")),
                remote_port=_unquote(iface.get("interfaceId")),
                remote_port_description=_unquote(iface.get("interfaceDescription")),
                remote_chassis_id=_str(n.get("chassisId")),
                capabilities=",".join(caps) or None,
                ttl_s=_int(n.get("ttl")),
                remote_mgmt_address=_str(mgmt[0].get("address")) if mgmt else None,
            )
            # newest: the latest contact (epoch seconds), else the most TTL left
            contact = n.get("lastContactTime")
            fresh = float(contact) if isinstance(contact, int | float) else _int(n.get("ttl"))
            rows.append((port, neighbour, fresh))
    return newest_per_port(rows)
