"""SONiC's LLDP table; a port listing two neighbours names the older one."""

from __future__ import annotations

from labtest.capabilities.switch import (
    LldpNeighbor,
)
from labtest.drivers.common.cells import cell_text as _text
from labtest.drivers.common.lldp import newest_per_port
from labtest.drivers.sonic.parsers._common import _keyed, _sonic, _tables_named

# --- LLDP --------------------------------------------------------------------


@_sonic("show lldp table")
def parse_lldp_table(text: str) -> dict[str, LldpNeighbor]:
    """A port may list two neighbours while an old one's hold time runs out (the table
    prints no age): the first row is kept and the other named (``older_neighbours``)."""
    rows = []
    for table in _tables_named(text, "LocalPort", "RemoteDevice", "RemotePortID"):
        for local, row in _keyed(table, "LocalPort", None):
            neighbour = LldpNeighbor(
                remote_system=_text(row["RemoteDevice"]),
                remote_port=_text(row["RemotePortID"]),
                remote_port_description=_text(table.cell(row, "RemotePortDescr")),
                capabilities=_text(table.cell(row, "Capability")),
            )
            rows.append((local, neighbour, None))
    return newest_per_port(rows)
