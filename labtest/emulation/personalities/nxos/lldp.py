"""NX-OS ``show lldp neighbors``: the capability legend, one row per neighbour heard, the
entry count.

Layout of ntc-templates' Nexus 9000 captures (``show_lldp_neighbors__ntc_n9k`` and
``__ntc_multiline``): a Device ID longer than its 20-character column is printed on a line
of its own and the row continues on the next; Local Intf in the short form (``Eth1/1``).
Neighbours come from the fabric's LLDP adverts, so a port that goes dark loses its row.
"""

from __future__ import annotations

from labtest.emulation.personalities.nxos.base import NxosCommands, short_name

DEVICE_ID_CHARS = 20
_LEGEND = [
    "Capability codes:",
    "  (R) Router, (B) Bridge, (T) Telephone, (C) DOCSIS Cable Device",
    "  (W) WLAN Access Point, (P) Repeater, (S) Station, (O) Other",
    "Device ID            Local Intf      Hold-time  Capability  Port ID",
]


class LldpCommands(NxosCommands):
    """The LLDP neighbour table, from the fabric's adverts."""

    def lldp_text(self) -> str:
        out = list(_LEGEND)
        neighbours = self.dev.lldp_neighbours()
        for n in neighbours:
            # a switch of the testbed bridges and routes; a host is an end station
            caps = "BR" if self.state.is_switch(n.system_name) else "S"
            device = n.system_name
            if len(device) > DEVICE_ID_CHARS:
                out.append(device)
                device = ""
            out.append(
                f"{device:<21}{short_name(n.local_port):<16}{n.ttl_s:<11}{caps:<12}{n.port_id}"
            )
        out.append(f"Total entries displayed: {len(neighbours)}")
        return "\n".join(out) + "\n"
