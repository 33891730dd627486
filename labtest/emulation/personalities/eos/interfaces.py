"""EOS interface documents: status, counters and rates, errors, PHY/FEC, PFC, egress queues
and ECN marks, as JSON and, where EOS has one, text."""

from __future__ import annotations

from typing import Any

from labtest.emulation.personalities import PRIORITIES, PortView
from labtest.emulation.personalities._text import fixed_columns
from labtest.emulation.personalities.eos.base import EosCommands, dotted_mac, short_name

RATE_MIN_INTERVAL_S = 1.0  # a rate needs two counter samples at least this far apart


class InterfaceCommands(EosCommands):
    """Interface status and counters, then FEC, PFC and queue counters."""

    def _link_status(self, view: PortView) -> str:
        if not view.admin_up:
            return "disabled"
        return "connected" if view.oper_up else "notconnect"

    def _media(self, port: str) -> str:
        inv = self.dev.fabric.transceiver(self.state.name, port)
        return inv.standard if inv.present else "Not Present"

    # keys: show_interfaces_status_json__veoslab_4_33 (routed ports carry no vlanId,
    # like its Management1 entry)
    def status_json(self) -> dict[str, Any]:
        out = {}
        for port in self.state.ports:
            st = self.dev.fabric.interface(self.state.name, port)
            view = PortView(
                port,
                0,
                st.admin_up,
                st.oper_up,
                st.speed_gbps,
                st.mtu_bytes,
                st.mac,
                st.link is not None,
                st.optic,
            )
            out[port] = {
                "description": self.state.descriptions.get(port, ""),
                "linkStatus": self._link_status(view),
                "duplex": "duplexFull",
                "bandwidth": int(st.speed_gbps * 1e9),
                "autoNegotigateActive": False,
                "autoNegotiateActive": False,
                "interfaceType": self._media(port),
                "vlanInformation": {
                    "interfaceMode": "routed",
                    "interfaceForwardingModel": "routed",
                },
                "lineProtocolStatus": _protocol(view, self._media(port)),
                "interfaceDamped": False,
            }
        return {"interfaceStatuses": out}

    # layout: show_interfaces_status__eantc_7050sx3 (EOS 4.31.2F text)
    def status_text(self) -> str:
        rows = []
        for port, st in self.status_json()["interfaceStatuses"].items():
            speed = f"{st['bandwidth'] // 10**9}G"
            rows.append(
                [
                    short_name(port),
                    st["description"],
                    st["linkStatus"],
                    "routed",
                    "full",
                    speed,
                    st["interfaceType"],
                    "",
                    "",
                ]
            )
        headers = [
            "Port",
            "Name",
            "Status",
            "Vlan",
            "Duplex",
            "Speed",
            "Type",
            "Flags",
            "Encapsulation",
        ]
        return fixed_columns(headers, rows) + "\n"

    def _counters(self, view: PortView) -> dict[str, Any]:
        now = self.state.boot_epoch_s() + self.state.uptime_s()
        return {
            "inOctets": view.rx_octets,
            "inUcastPkts": view.rx_packets,
            "inMulticastPkts": 0,
            "inBroadcastPkts": 0,
            "inDiscards": view.rx_discards,
            "inTotalPkts": view.rx_packets,
            "outOctets": view.tx_octets,
            "outUcastPkts": view.tx_packets,
            "outMulticastPkts": 0,
            "outBroadcastPkts": 0,
            "outDiscards": view.tx_discards,
            "outTotalPkts": view.tx_packets,
            "linkStatusChanges": view.status_changes,
            "totalInErrors": view.rx_errors,
            "inputErrorsDetail": {
                "runtFrames": 0,
                "giantFrames": 0,
                "fcsErrors": view.rx_fcs_errors,
                "alignmentErrors": 0,
                "symbolErrors": 0,
                "rxPause": sum(view.pfc_rx_frames),  # PFC frames are MAC-control pauses
            },
            "totalOutErrors": view.tx_errors,
            "outputErrorsDetail": {
                "collisions": 0,
                "lateCollisions": 0,
                "deferredTransmissions": 0,
                "txPause": sum(view.pfc_tx_frames),
            },
            "counterRefreshTime": round(now, 6),
        }

    # keys: show_interfaces_json__veoslab_4_33 (Ethernet7: no addresses)
    def interfaces_json(self) -> dict[str, Any]:
        out = {}
        for view in self.state.views():
            d = self.dev.since_last(view, RATE_MIN_INTERVAL_S)
            in_bps, out_bps = d.per_s(8 * d.rx_octets), d.per_s(8 * d.tx_octets)
            in_pps, out_pps = d.per_s(d.rx_packets), d.per_s(d.tx_packets)
            status = self._link_status(view)
            out[view.name] = {
                "name": view.name,
                "forwardingModel": "routed",
                "lineProtocolStatus": _protocol(view, self._media(view.name)),
                "interfaceStatus": status,
                "hardware": "ethernet",
                "interfaceAddress": [],
                "physicalAddress": view.mac,
                "burnedInAddress": view.mac,
                "description": self.state.descriptions.get(view.name, ""),
                "bandwidth": int(view.speed_gbps * 1e9),
                "mtu": view.mtu_bytes,
                "l3MtuConfigured": False,
                "l2Mru": 0,
                "lastStatusChangeTimestamp": round(self.state.boot_epoch_s(), 6),
                "interfaceStatistics": {
                    "updateInterval": 300.0,
                    "inBitsRate": in_bps,
                    "inPktsRate": in_pps,
                    "outBitsRate": out_bps,
                    "outPktsRate": out_pps,
                },
                "interfaceCounters": self._counters(view),
                "duplex": "duplexFull",
                "autoNegotiate": "unknown",
                "loopbackMode": "loopbackNone",
                "lanes": self.dev.fabric.interface(self.state.name, view.name).lanes,
            }
        return {"interfaces": out}

    # layout: show_interfaces__ntc_routed (one block per interface, counter lines last)
    def interfaces_text(self) -> str:
        out = []
        for port, e in self.interfaces_json()["interfaces"].items():
            c = e["interfaceCounters"]
            i, o = c["inputErrorsDetail"], c["outputErrorsDetail"]
            state = {"connected": "up", "disabled": "administratively down"}.get(
                e["interfaceStatus"], "down"
            )
            out += [
                f"{port} is {state}, line protocol is {e['lineProtocolStatus']} "
                f"({e['interfaceStatus']})",
                f"  Hardware is Ethernet, address is {dotted_mac(e['physicalAddress'])}",
                f"  Ethernet MTU {e['mtu']} bytes, BW {e['bandwidth'] // 1000} kbit",
                f"     {c['inTotalPkts']} packets input, {c['inOctets']} bytes",
                f"     Received {c['inBroadcastPkts']} broadcasts, "
                f"{c['inMulticastPkts']} multicast",
                f"     {i['runtFrames']} runts, {i['giantFrames']} giants",
                f"     {c['totalInErrors']} input errors, {i['fcsErrors']} CRC, "
                f"{i['alignmentErrors']} alignment, {i['symbolErrors']} symbol, "
                f"{c['inDiscards']} input discards",
                f"     {i['rxPause']} PAUSE input",
                f"     {c['outTotalPkts']} packets output, {c['outOctets']} bytes",
                f"     Sent {c['outBroadcastPkts']} broadcasts, {c['outMulticastPkts']} multicast",
                f"     {c['totalOutErrors']} output errors, {o['collisions']} collisions",
                f"     {o['lateCollisions']} late collision, "
                f"{o['deferredTransmissions']} deferred, {c['outDiscards']} output discards",
                f"     {o['txPause']} PAUSE output",
            ]
        return "\n".join(out) + "\n"

    # keys: EOS eAPI "show interfaces counters" (no published capture kept; the parser's
    # reading of it is the same counter set as interfaceCounters above)
    def counters_json(self) -> dict[str, Any]:
        out = {}
        for view in self.state.views():
            c = self._counters(view)
            keep = (
                "inOctets",
                "inUcastPkts",
                "inMulticastPkts",
                "inBroadcastPkts",
                "inDiscards",
                "outOctets",
                "outUcastPkts",
                "outMulticastPkts",
                "outBroadcastPkts",
                "outDiscards",
            )
            out[view.name] = {k: c[k] for k in keep} | {
                "lastUpdateTimestamp": c["counterRefreshTime"]
            }
        return {"interfaces": out}

    # keys: show_interfaces_counters_errors_json__anta_fixture
    def errors_json(self) -> dict[str, Any]:
        out = {}
        for view in self.state.views():
            out[view.name] = {
                "inErrors": view.rx_errors,
                "frameTooLongs": 0,
                "outErrors": view.tx_errors,
                "frameTooShorts": 0,
                "fcsErrors": view.rx_fcs_errors,
                "alignmentErrors": 0,
                "symbolErrors": 0,
            }
        return {"interfaceErrorCounters": out}

    # --- FEC, PFC and queues -----------------------------------------------------------

    def _attr(self, value: float | bool | str, changed: bool) -> dict[str, Any]:
        """EOS PHY attribute shape ``{value, changes, lastChange}`` (arex's reading of it)."""
        now = round(self.state.boot_epoch_s() + self.state.uptime_s(), 6)
        return {"value": value, "changes": int(changed), "lastChange": now if changed else 0.0}

    # keys: show_interfaces_phy_detail_json__anta_ber_success (description, fec
    # corrected/uncorrected codewords, preFecBer, phyState); ports without a module
    # carry no fec block, like the sample's retimer entries without one
    def phy_detail_json(self) -> dict[str, Any]:
        fabric, name = self.dev.fabric, self.state.name
        out: dict[str, Any] = {}
        for view in self.state.views():
            status: dict[str, Any] = {
                "description": {"phyChipName": "BCM78900-TSCBH", "location": "line"},
                "phyState": self._attr("linkUp" if view.oper_up else "linkDown", True),
            }
            if view.optic:
                fec = fabric.fec(name, view.name)
                status["fec"] = {
                    "correctedCodewords": self._attr(
                        fec.corrected_codewords, fec.corrected_codewords > 0
                    ),
                    "uncorrectedCodewords": self._attr(
                        fec.uncorrectable_codewords, fec.uncorrectable_codewords > 0
                    ),
                }
                status["preFecBer"] = {"value": fec.pre_fec_ber}
            out[view.name] = {
                "phyStatuses": [status],
                "interfaceState": {},
                "transceiver": {},
                "macFaults": {},
            }
        return {"interfacePhyStatuses": out}

    # keys: show_priority_flow_control_counters_json__anta_fixture (EOS totals the
    # priorities per port)
    def pfc_json(self) -> dict[str, Any]:
        return {
            "interfaceCounters": {
                v.name: {"rxFrames": sum(v.pfc_rx_frames), "txFrames": sum(v.pfc_tx_frames)}
                for v in self.state.views()
            }
        }

    # keys: show_interfaces_priority_flow_control_counters_detail_json__dne_taac_keys
    # (rx/txFrames per priority, every port)
    def pfc_detail_json(self) -> dict[str, Any]:
        return {
            "interfaces": {
                v.name: {
                    "priorities": {
                        str(prio): {"rxFrames": rx, "txFrames": tx}
                        for prio, (rx, tx) in enumerate(
                            zip(v.pfc_rx_frames, v.pfc_tx_frames, strict=True)
                        )
                    }
                }
                for v in self.state.views()
            }
        }

    # keys: show_priority_flow_control_counters_watchdog_json__dne_taac_keys (stuck and
    # recovery counts per tx queue); a port is absent until its first watchdog event, so a
    # switch that never saw one answers {"interfaces": {}}
    def pfc_watchdog_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for s in self.dev.fabric.traffic.pfcwd_stats(self.state.name):
            port = s.endpoint.partition(":")[2]
            out.setdefault(port, {})[str(s.priority)] = {
                "stuckCount": s.storm_detected,
                "recoveryCount": s.storm_restored,
            }
        return {
            "interfaces": {
                port: {"txQueues": queues}
                for port, queues in out.items()
                if any(q["stuckCount"] for q in queues.values())
            }
        }

    # keys: show_interfaces_counters_queue_detail_json__anta_fixture (drops per traffic
    # class and drop precedence; the model drops at DP0)
    def queue_detail_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for view in self.state.views():
            drops = {q.priority: q.drop_packets for q in view.queues}

            def classes(values: dict[int, int]) -> dict[str, Any]:
                return {
                    f"TC{tc}": {"dropPrecedences": {"DP0": {"droppedPackets": values.get(tc, 0)}}}
                    for tc in range(PRIORITIES)
                }

            out[view.name] = {
                "ucastQueues": {"trafficClasses": classes(drops)},
                "mcastQueues": {"trafficClasses": classes({})},
            }
        return {"egressQueueCounters": {"interfaces": out}}

    # keys: show_qos_interfaces_ecn_counters_queue_json__anta_fixture (counts as strings)
    def ecn_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for view in self.state.views():
            marked = {q.priority: q.ecn_marked_packets for q in view.queues}
            out[view.name] = {
                "queueCounters": {str(tc): str(marked.get(tc, 0)) for tc in range(PRIORITIES)}
            }
        return {"intfQueueCounters": out}


def _protocol(view: PortView, media: str) -> str:
    if media == "Not Present":
        return "notPresent"
    return "up" if view.oper_up else "down"

