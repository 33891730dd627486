"""EOS LLDP documents: the neighbour table (JSON and text) and the detail document."""

from __future__ import annotations

from typing import Any

from labtest.emulation.personalities._text import fixed_columns
from labtest.emulation.personalities.eos.base import EosCommands, dotted_mac, short_name


class LldpCommands(EosCommands):
    """The LLDP neighbour table and its detail, from the fabric's adverts."""

    # keys: show_lldp_neighbors_json__sonic_mgmt_vlab04 (sonic-mgmt's Arista capture)
    def lldp_json(self) -> dict[str, Any]:
        neighbours = self.dev.lldp_neighbours()
        return {
            "tablesLastChangeTime": round(self.state.boot_epoch_s(), 6),
            "tablesAgeOuts": 0,
            "tablesInserts": len(neighbours),
            "lldpNeighbors": [
                {
                    "ttl": n.ttl_s,
                    "neighborDevice": n.system_name,
                    "neighborPort": n.port_id,
                    "port": n.local_port,
                }
                for n in neighbours
            ],
            "tablesDeletes": 0,
            "tablesDrops": 0,
        }

    # layout: show_lldp_neighbors__pr5698_eos_side plus EOS's table counters header
    def lldp_text(self) -> str:
        doc = self.lldp_json()
        rows = [
            [short_name(n["port"]), n["neighborDevice"], n["neighborPort"], n["ttl"]]
            for n in doc["lldpNeighbors"]
        ]
        head = [
            "Last table change time   : 0:00:30 ago",
            f"Number of table inserts  : {doc['tablesInserts']}",
            "Number of table deletes  : 0",
            "Number of table drops    : 0",
            "Number of table age-outs : 0",
            "",
        ]
        body = fixed_columns(["Port", "Neighbor Device ID", "Neighbor Port ID", "TTL"], rows, gap=3)
        return "\n".join([*head, body]) + "\n"

    # keys: show_lldp_neighbors_detail_json__napalm_normal (ports without a neighbour
    # carry an empty lldpNeighborInfo list)
    def lldp_detail_json(self) -> dict[str, Any]:
        heard = {n.local_port: n for n in self.dev.lldp_neighbours()}
        since = round(self.state.boot_epoch_s(), 6)
        now = round(since + self.state.uptime_s(), 6)
        out: dict[str, Any] = {}
        for port in self.state.ports:
            n = heard.get(port)
            if n is None:
                out[port] = {"lldpNeighborInfo": []}
                continue
            is_switch = self.state.is_switch(n.system_name)
            mgmt = (
                []
                if not n.management_address
                else [
                    {
                        "oidString": "",
                        "interfaceNumType": "ifIndex",
                        "interfaceNum": 0,
                        "address": n.management_address,
                        "addressType": "ipv4",
                    }
                ]
            )
            out[port] = {
                "lldpNeighborInfo": [
                    {
                        "systemCapabilities": {
                            "bridge": is_switch,
                            "router": is_switch,
                            "wlanAccessPoint": False,
                        },
                        "lastChangeTime": since,
                        "neighborInterfaceInfo": {
                            "portAndProtocolVlanEnabled": {},
                            "linkAggregationStatus": "capableAndDisabled",
                            "unknownTlvs": [],
                            "interfaceIdType": "interfaceName",
                            "interfaceId": f'"{n.port_id}"',
                            "interfaceDescription": n.port_description,
                            "autoNegCapability": "notCapable",
                            "autoNegAdvertisedCapabilities": [],
                            "protocolIdentityInfo": [],
                            "portAndProtocolVlanSupported": {},
                            "operMauType": "unknown",
                            "vlanNames": {},
                            "maxFrameSize": 9236,
                            "linkAggregationInterfaceId": 0,
                            "unknownOrgDefinedTlvs": [],
                        },
                        "neighborDiscoveryTime": since,
                        "lastContactTime": now,
                        "chassisId": dotted_mac(n.chassis_id),
                        "systemName": n.system_name,
                        "systemDescription": self.state.peer_description(n.system_name),
                        "ttl": n.ttl_s,
                        "managementAddresses": mgmt,
                        "chassisIdType": "macAddress",
                    }
                ]
            }
        return {"lldpNeighbors": out}

