"""Arista EOS personality: the EOS CLI of one switch, with ``| json`` as EOS renders it.

JSON documents carry the keys of real EOS answers (the samples under
``tests/drivers/samples/eos`` name their sources; each renderer says which one
it follows). Text forms exist for ``show version``, ``show interfaces status``,
``show interfaces transceiver [detail]``, ``show lldp neighbors`` and ``show
running-config``; a command outside the set answers ``% Invalid input`` like
EOS does for an unknown keyword.

FEC counters and pre-FEC BER (``show interfaces phy detail``), PFC frames
(``show priority-flow-control counters``), egress queue drops (``show
interfaces counters queue detail``) and ECN marks (``show qos interfaces ecn
counters queue``) come from the same fabric-model values the SONiC personality
prints, so a fault on an EOS port shows in EOS's counters.

The session starts in privileged mode (an account with privilege 15).
``configure`` enters config mode (``spine1(config)#``), ``interface X`` an
interface (``spine1(config-if-Et1/1)#``), where ``shutdown`` / ``no shutdown``
/ ``mtu`` / ``description`` apply at once; ``exit``/``end`` leave. Keywords may
be abbreviated to a unique prefix (``sh int status``). Snapshots use EOS's own
mechanism: ``copy running-config flash:NAME`` and ``configure replace flash:NAME``.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from labtest.emulation.lab import Served
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import PRIORITIES, STARTUP, PortView, SwitchState
from labtest.emulation.personalities._clock import epoch_s
from labtest.emulation.personalities._text import eos_uptime, expand, fixed_columns
from labtest.emulation.personalities.switch_mib import SwitchMib, dbm_to_mw
from labtest.emulation.sshserver import CliReply
from labtest.testbed.model import Device

DEFAULT_VERSION = "4.33.2F"
DEFAULT_MODEL = "DCS-7060DX5-64S"
INTERNAL_BUILD = "40713977.4332F"
BUILD_ID = "bb0a7f77-9bdd-4ede-92a0-7a42f1a6dda3"
SYS_OBJECT_ID = (1, 3, 6, 1, 4, 1, 30065, 1, 3011, 7060, 3913, 64)  # aristaProducts subtree
MEM_TOTAL_KB, MEM_FREE_KB = 8051592, 5439548
LLDP_TTL_S = 120
INVALID = "% Invalid input"


def eos_if_index(port: str) -> int | None:
    """EOS numbers ``EthernetN`` as N and ``EthernetX/Y`` as X*1000+Y [assumption: the
    layout LibreNMS walks show for breakout ports]."""
    m = re.fullmatch(r"Ethernet(\d+)(?:/(\d+))?", port)
    if not m:
        return None
    return int(m.group(1)) * 1000 + int(m.group(2)) if m.group(2) else int(m.group(1))


def short_name(port: str) -> str:
    """``Ethernet1/1`` -> ``Et1/1`` as EOS text tables print it."""
    return re.sub(r"^Ethernet", "Et", port)


def dotted_mac(mac: str) -> str:
    """``02:ab:cd:ef:01:02`` -> ``02ab.cdef.0102`` (EOS text and LLDP chassis ids)."""
    digits = mac.replace(":", "").lower()
    return ".".join(digits[i : i + 4] for i in range(0, 12, 4))


@dataclass
class EosDevice:
    """One EOS switch: the shared state plus rate samples."""

    state: SwitchState
    rates: dict[str, tuple[float, PortView]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def fabric(self) -> Fabric:
        return self.state.fabric

    def version(self) -> str:
        return self.fabric.device_facts(self.name).firmware_version or DEFAULT_VERSION

    def model(self) -> str:
        return self.state.var("model", DEFAULT_MODEL)


_TREE: dict[str, Any] = {
    "show": {
        "version": {},
        "clock": {},
        "interfaces": {
            "status": {},
            "counters": {"errors": {}, "queue": {"detail": {}}},
            "transceiver": {"detail": {}},
            "phy": {"detail": {}},
        },
        "priority-flow-control": {"counters": {}},
        "inventory": {},
        "qos": {"interfaces": {"ecn": {"counters": {"queue": {}}}}},
        "lldp": {"neighbors": {"detail": {}}},
        "running-config": {},
    },
    "configure": {"terminal": {}, "replace": {}},
    "copy": {},
    "write": {"memory": {}},
    "reload": {},
    "enable": {},
    "terminal": {"length": {}, "width": {}},
}
_CONFIG_TREE: dict[str, Any] = {
    "interface": {},
    "shutdown": {},
    "no": {"shutdown": {}, "description": {}},
    "mtu": {},
    "description": {},
    "exit": {},
    "end": {},
}


class EosCli:
    """One SSH channel: exec mode, config mode, or an interface's config mode."""

    def __init__(self, dev: EosDevice) -> None:
        self.dev = dev
        self.state = dev.state
        self.mode = "exec"  # exec | config | config-if
        self.interface: str | None = None

    @property
    def prompt(self) -> str:
        name = self.state.name
        if self.mode == "config":
            return f"{name}(config)#"
        if self.mode == "config-if" and self.interface:
            return f"{name}(config-if-{short_name(self.interface)})#"
        return f"{name}#"

    def run(self, command: str) -> CliReply:
        line = command.strip()
        if not line or line.startswith("!"):
            return CliReply("")
        if line in ("exit", "logout", "quit") and self.mode == "exec":
            return CliReply("", close=True)
        body, _, pipe = line.partition("|")
        try:
            words = shlex.split(body)
        except ValueError:
            return _invalid()
        if self.mode != "exec" and words and words[0].lower() not in ("sh", "sho", "show"):
            return self._config_line(words)
        path, used, unknown = expand(words, _TREE)
        if unknown is not None or not path:
            return _invalid(unknown, len(path) + 1)
        return self._exec(path, words[used:], pipe.strip())

    # --- exec mode -------------------------------------------------------------------

    def _exec(self, path: list[str], args: list[str], pipe: str) -> CliReply:
        key = " ".join(path)
        as_json = pipe.lower() == "json"
        if pipe and not as_json:
            return self._filtered(key, args, pipe)
        documents = {
            "show version": self.version_json,
            "show clock": self.clock_json,
            "show interfaces status": self.status_json,
            "show interfaces": self.interfaces_json,
            "show interfaces counters": self.counters_json,
            "show interfaces counters errors": self.errors_json,
            "show interfaces transceiver": lambda: self.transceiver_json(False),
            "show interfaces transceiver detail": lambda: self.transceiver_json(True),
            "show lldp neighbors": self.lldp_json,
            "show lldp neighbors detail": self.lldp_detail_json,
            "show interfaces phy detail": self.phy_detail_json,
            "show priority-flow-control counters": self.pfc_json,
            "show interfaces counters queue detail": self.queue_detail_json,
            "show qos interfaces ecn counters queue": self.ecn_json,
            "show inventory": self.inventory_json,
        }
        texts = {
            "show version": self.version_text,
            "show clock": self.clock_text,
            "show interfaces status": self.status_text,
            "show interfaces transceiver": self.transceiver_text,
            "show interfaces transceiver detail": self.transceiver_detail_text,
            "show inventory": self.inventory_text,
            "show interfaces": self.interfaces_text,
            "show lldp neighbors": self.lldp_text,
            "show running-config": self.running_config,
        }
        if as_json and key in documents:
            return CliReply(json.dumps(documents[key](), indent=4) + "\n")
        if as_json:
            return CliReply("% This is an unconverted command\n", 1)
        if key in texts:
            return CliReply(texts[key]())
        return self._action(key, args)

    def _filtered(self, key: str, args: list[str], pipe: str) -> CliReply:
        """``| include RE`` / ``| exclude RE`` on a text answer."""
        verb, _, pattern = pipe.partition(" ")
        verb = verb.lower()
        reply = self._exec(key.split(), args, "")
        if verb not in ("include", "exclude", "grep") or reply.exit_status:
            return reply if verb in ("include", "exclude", "grep") else _invalid()
        keep = verb != "exclude"
        rx = re.compile(pattern.strip())
        lines = [ln for ln in reply.output.splitlines() if bool(rx.search(ln)) == keep]
        return CliReply("\n".join(lines) + ("\n" if lines else ""))

    def _action(self, key: str, args: list[str]) -> CliReply:
        state = self.state
        if key in ("configure", "configure terminal") and not args:
            self.mode = "config"
            return CliReply("")
        if key == "configure replace" and args:
            if not state.load(_flash_key(args[0])):
                return CliReply(f"% Error: file {args[0]} does not exist\n", 1)
            return CliReply("")
        if key == "copy" and len(args) == 2 and args[0] == "running-config":
            state.save(STARTUP if args[1] == "startup-config" else _flash_key(args[1]))
            return CliReply("Copy completed successfully.\n")
        if key == "write memory":
            state.save(STARTUP)
            return CliReply("Copy completed successfully.\n")
        if key == "reload" and args and args[0] in ("now", "force"):
            state.reboot()
            return CliReply("")
        if key in ("enable", "terminal length", "terminal width"):
            return CliReply("")
        return CliReply("% Incomplete command\n", 1) if not args else _invalid(args[0])

    # --- config mode -----------------------------------------------------------------

    def _config_line(self, words: list[str]) -> CliReply:
        path, used, unknown = expand(words, _CONFIG_TREE)
        if unknown is not None or not path:
            return _invalid(unknown)
        key, args = " ".join(path), words[used:]
        if key == "end":
            self.mode, self.interface = "exec", None
        elif key == "exit":
            self.mode, self.interface = (
                ("config", None) if self.mode == "config-if" else ("exec", None)
            )
        elif key == "interface":
            port = _long_name("".join(args))
            if not self.state.has_port(port):
                return _invalid(args[0] if args else None)
            self.mode, self.interface = "config-if", port
        elif self.mode != "config-if" or self.interface is None:
            return _invalid(words[0])
        elif key in ("shutdown", "no shutdown"):
            self.dev.fabric.set_admin(self.state.name, self.interface, key == "no shutdown")
        elif key == "mtu" and args and args[0].isdigit():
            self.dev.fabric.set_mtu(self.state.name, self.interface, int(args[0]))
        elif key == "description":
            self.state.descriptions[self.interface] = " ".join(args)
        elif key == "no description":
            self.state.descriptions.pop(self.interface, None)
        else:
            return CliReply("% Incomplete command\n", 1)
        return CliReply("")

    # --- version ---------------------------------------------------------------------

    # keys: show_version_json__veoslab_4_33 (EOS 4.33.2F eAPI capture)
    def version_json(self) -> dict[str, Any]:
        facts = self.dev.fabric.device_facts(self.state.name)
        version = self.dev.version()
        return {
            "mfgName": "Arista",
            "modelName": self.dev.model(),
            "hardwareRevision": self.state.var("hardware_rev", "11.03"),
            "serialNumber": facts.serial,
            "systemMacAddress": facts.base_mac,
            "hwMacAddress": facts.base_mac,
            "configMacAddress": "00:00:00:00:00:00",
            "version": version,
            "architecture": "x86_64",
            "internalVersion": f"{version}-{INTERNAL_BUILD}",
            "internalBuildId": BUILD_ID,
            "imageFormatVersion": "3.0",
            "imageOptimization": "Default",
            "bootupTimestamp": round(self.state.boot_epoch_s(), 6),
            "uptime": round(self.state.uptime_s(), 2),
            "memTotal": MEM_TOTAL_KB,
            "memFree": MEM_FREE_KB,
            "isIntlVersion": False,
        }

    # --- clock: the fabric's virtual pace, so counter windows match what they counted ---

    # shape: show_clock_json__anta_asynceapi_ceoslab / show_clock_json__vane_fixture_dut
    def clock_json(self) -> dict[str, Any]:
        now = epoch_s(self.state.fabric)
        t = datetime.fromtimestamp(now, UTC)
        return {
            "utcTime": now,
            "timezone": "UTC",
            "localTime": {
                "year": t.year,
                "month": t.month,
                "dayOfMonth": t.day,
                "hour": t.hour,
                "min": t.minute,
                "sec": t.second,
                "dayOfWeek": (t.weekday() + 1) % 7,
                "dayOfYear": t.timetuple().tm_yday,
                "daylightSavingsAdjust": 0,
            },
            "clockSource": {"local": True},
        }

    # layout: the text of show_clock_json__vane_fixture_dut
    def clock_text(self) -> str:
        t = datetime.fromtimestamp(epoch_s(self.state.fabric), UTC)
        return f"{t:%a %b %d %H:%M:%S %Y}\nTimezone: UTC\nClock source: local\n"

    # layout: show_version__eantc_7050sx3 (EOS 4.31.2F text)
    def version_text(self) -> str:
        v = self.version_json()
        mac = dotted_mac(v["systemMacAddress"])
        return "\n".join(
            [
                f"Arista {v['modelName']}",
                f"Hardware version: {v['hardwareRevision']}",
                f"Serial number: {v['serialNumber']}",
                f"Hardware MAC address: {mac}",
                f"System MAC address: {mac}",
                "",
                f"Software image version: {v['version']}",
                "Architecture: x86_64",
                f"Internal build version: {v['internalVersion']}",
                f"Internal build ID: {BUILD_ID}",
                "Image format version: 3.0",
                "Image optimization: Default",
                "",
                f"Uptime: {eos_uptime(v['uptime'])}",
                f"Total memory: {MEM_TOTAL_KB} kB",
                f"Free memory: {MEM_FREE_KB} kB",
                "",
            ]
        )

    # --- interfaces ------------------------------------------------------------------

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

    def _rates(self, view: PortView) -> tuple[float, float, float, float]:
        """(in bit/s, in pkt/s, out bit/s, out pkt/s) since this port's previous sample."""
        with self.dev.lock:
            previous = self.dev.rates.get(view.name)
            if previous is None or view.time_s - previous[0] >= 1.0:
                self.dev.rates[view.name] = (view.time_s, view)
        if previous is None or view.time_s <= previous[0]:
            return 0.0, 0.0, 0.0, 0.0
        dt, old = view.time_s - previous[0], previous[1]
        return (
            8 * (view.rx_octets - old.rx_octets) / dt,
            (view.rx_packets - old.rx_packets) / dt,
            8 * (view.tx_octets - old.tx_octets) / dt,
            (view.tx_packets - old.tx_packets) / dt,
        )

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
            "linkStatusChanges": view.link_down_count * 2,
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
            in_bps, in_pps, out_bps, out_pps = self._rates(view)
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

    # --- transceivers ----------------------------------------------------------------

    # keys: show_interfaces_transceiver_json__netpanda_ethernet52 and, with thresholds,
    # show_interfaces_transceiver_detail_json__dwdm_ethernet5_2; EOS lists each lane
    # of a multi-lane optic as its own interface (Ethernet1/1..1/4)
    def transceiver_json(self, detail: bool) -> dict[str, Any]:
        fabric, name = self.dev.fabric, self.state.name
        out: dict[str, Any] = {}
        for port in self.state.ports:
            inv = fabric.transceiver(name, port)
            if not inv.present:
                out[port] = {}
                continue
            dom = fabric.dom(name, port)
            updated = round(self.state.boot_epoch_s() + self.state.uptime_s(), 6)
            total_mw = sum(dbm_to_mw(lane.rx_power_dbm) for lane in dom.lanes)
            for lane in dom.lanes:
                entry: dict[str, Any] = {
                    "updateTime": updated,
                    "temperature": dom.temperature_c,
                    "mediaType": inv.standard,
                    "txBias": lane.bias_ma,
                    "txPower": lane.tx_power_dbm,
                    "narrowBand": False,
                    "vendorSn": inv.serial,
                    "rxPower": lane.rx_power_dbm,
                    "voltage": dom.voltage_v,
                }
                if detail:
                    entry["totalRxPower"] = round(10 * math.log10(total_mw), 2)
                    entry["details"] = self._thresholds(port)
                lane_port = _lane_port(port, lane.lane, self.state)
                if lane_port is not None:
                    out[lane_port] = entry
        return {"interfaces": out}

    def _thresholds(self, port: str) -> dict[str, Any]:
        th = self.dev.fabric.dom_thresholds(self.state.name, port)

        def levels(t: Any) -> dict[str, float]:
            return {
                "highWarn": t.high_warning,
                "lowWarn": t.low_warning,
                "highAlarm": t.high_alarm,
                "lowAlarm": t.low_alarm,
            }

        return {
            "txPower": levels(th.tx_power_dbm),
            "temperature": levels(th.temperature_c),
            "totalRxPower": levels(th.rx_power_dbm),
            "txBias": levels(th.bias_ma),
            "rxPower": levels(th.rx_power_dbm),
            "voltage": levels(th.voltage_v),
        }

    # layout: show_interfaces_transceiver__ntc_templates (EOS text, one row per lane port)
    def transceiver_text(self) -> str:
        rows = []
        for port, t in self.transceiver_json(False)["interfaces"].items():
            values = [t.get(k) for k in ("temperature", "voltage", "txBias", "txPower", "rxPower")]
            if not t:
                rows.append([short_name(port), *["N/A"] * 6])
                continue
            rows.append([short_name(port), *(_fixed2(v) for v in values), "0:00:01 ago"])
        head = [
            "If device is externally calibrated, only calibrated values are printed.",
            "N/A: not applicable, Tx: transmit, Rx: receive.",
            "mA: milliamperes, dBm: decibels (milliwatts).",
            "                               Bias      Optical   Optical",
            "          Temp       Voltage   Current   Tx Power  Rx Power",
        ]
        headers = ["Port", "(Celsius)", "(Volts)", "(mA)", "(dBm)", "(dBm)", "Last Update"]
        rule = ["-----", "---------", "--------", "--------", "--------", "--------", "-" * 19]
        return "\n".join([*head, fixed_columns(headers, [rule, *rows], gap=2)]) + "\n"

    # layout: show_interfaces_transceiver_detail__ntc_templates (one table per quantity)
    def transceiver_detail_text(self) -> str:
        entries = {p: t for p, t in self.transceiver_json(True)["interfaces"].items() if t}
        lines = [
            "mA: milliamperes, dBm: decibels (milliwatts), NA or N/A: not applicable.",
            "++ : high alarm, +  : high warning, -  : low warning, -- : low alarm.",
            "A2D readouts (if they differ), are reported in parentheses.",
            "The threshold values are calibrated.",
        ]
        for key, label, unit in (
            ("temperature", "Temperature", "(Celsius)"),
            ("voltage", "Voltage", "(Volts)"),
            ("txBias", "Current", "(mA)"),
            ("txPower", "Tx Power", "(dBm)"),
            ("rxPower", "Rx Power", "(dBm)"),
        ):
            rows = []
            for port, t in entries.items():
                th = t["details"][key]
                levels = ("highAlarm", "highWarn", "lowAlarm", "lowWarn")
                rows.append([short_name(port), _fixed2(t[key]), *(_fixed2(th[k]) for k in levels)])
            lines += [
                "                         High Alarm  High Warn   Low Alarm   Low Warn",
                f"           {label:<13} Threshold   Threshold   Threshold   Threshold",
                fixed_columns(
                    ["Port", unit, unit, unit, unit, unit],
                    [["-------", "-" * 12, *["-" * 10] * 4], *rows],
                    gap=2,
                ),
            ]
        return "\n".join(lines) + "\n"

    # --- inventory -------------------------------------------------------------------

    # keys: show_inventory_json__anta_fixture (xcvrSlots keyed by slot number; a
    # breakout port EthernetX/N sits in slot X)
    def inventory_json(self) -> dict[str, Any]:
        slots: dict[str, Any] = {}
        for port in self.state.ports:
            m = re.fullmatch(r"Ethernet(\d+)(?:/1)?", port)
            if not m:
                continue
            inv = self.dev.fabric.transceiver(self.state.name, port)
            slots[m.group(1)] = (
                {
                    "mfgName": inv.vendor,
                    "modelName": inv.part_number,
                    "serialNum": inv.serial,
                    "hardwareRev": inv.hardware_rev,
                }
                if inv.present
                else {"mfgName": "Not Present", "modelName": "", "serialNum": "", "hardwareRev": ""}
            )
        return {"xcvrSlots": slots}

    # layout: show_inventory__ntc_7280dr3a (the transceiver-slot table of the text)
    def inventory_text(self) -> str:
        slots = self.inventory_json()["xcvrSlots"]
        rows = [
            f" {slot} {x['mfgName']} {x['modelName']} {x['serialNum']} {x['hardwareRev']}"
            if x["modelName"]
            else f" {slot} Not Present"
            for slot, x in slots.items()
        ]
        return (
            "\n".join(
                [
                    f"System has {len(slots)} transceiver slots",
                    " Port Manufacturer Model Serial Number Rev",
                    " ---- ---------------- ---------------- ---------------- ----",
                    *rows,
                ]
            )
            + "\n"
        )

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

    # --- LLDP ------------------------------------------------------------------------

    def _neighbours(self) -> list[Any]:
        return sorted(
            self.dev.fabric.lldp_neighbours(self.state.name),
            key=lambda n: self.state.if_index[n.local_port],
        )

    # keys: show_lldp_neighbors_json__sonic_mgmt_vlab04 (sonic-mgmt's Arista capture)
    def lldp_json(self) -> dict[str, Any]:
        neighbours = self._neighbours()
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
        heard = {n.local_port: n for n in self._neighbours()}
        since = round(self.state.boot_epoch_s(), 6)
        now = round(since + self.state.uptime_s(), 6)
        out: dict[str, Any] = {}
        for port in self.state.ports:
            n = heard.get(port)
            if n is None:
                out[port] = {"lldpNeighborInfo": []}
                continue
            peer = self.dev.fabric.testbed.devices.get(n.system_name)
            is_switch = peer is not None and peer.driver in ("sonic", "eos")
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
                        "systemDescription": _peer_descr(peer.driver if peer else ""),
                        "ttl": n.ttl_s,
                        "managementAddresses": mgmt,
                        "chassisIdType": "macAddress",
                    }
                ]
            }
        return {"lldpNeighbors": out}

    # --- running-config --------------------------------------------------------------

    # layout: EOS "show running-config" (header comments, one stanza per interface)
    def running_config(self) -> str:
        state = self.state
        cfg = state.running_config()
        lines = [
            "! Command: show running-config",
            f"! device: {state.name} ({self.dev.model()}, EOS-{self.dev.version()})",
            "!",
            "! boot system flash:/EOS.swi",
            "!",
            "transceiver qsfp default-mode 4x10G",
            "!",
            f"hostname {state.name}",
            "!",
        ]
        pfc = cfg["pfc"]
        for port in state.ports:
            lines.append(f"interface {port}")
            if cfg["description"].get(port):
                lines.append(f"   description {cfg['description'][port]}")
            lines.append(f"   mtu {cfg['mtu'][port]}")
            lines.append("   no switchport")
            if pfc:
                lines.append("   priority-flow-control on")
                lines += [f"   priority-flow-control priority {p} no-drop" for p in pfc]
            if not cfg["admin"][port]:
                lines.append("   shutdown")
            lines.append("!")
        wd = cfg["pfcwd"]
        if wd["enabled"]:
            lines += [
                "priority-flow-control",
                f"   pause watchdog default timeout {wd['detection_ms'] / 1000:g}",
                f"   pause watchdog default recovery-time {wd['restoration_ms'] / 1000:g}",
                f"   pause watchdog default polling-interval {wd['poll_ms'] / 1000:g}",
                "!",
            ]
        lines.append("end")
        return "\n".join(lines) + "\n"


# --- helpers ------------------------------------------------------------------------


def _invalid(word: str | None = None, token: int = 0) -> CliReply:
    """EOS's refusal of an unknown keyword."""
    detail = f" (at token {token}: '{word}')" if word and token else ""
    return CliReply(f"{INVALID}{detail}\n", 1)


def _fixed2(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.2f}"


def _flash_key(path: str) -> str:
    return "flash:" + path.removeprefix("flash:").lstrip("/")


def _long_name(text: str) -> str:
    m = re.fullmatch(r"(?i)(?:et|eth|ethernet)\s*(\d[\d/]*)", text.strip())
    return f"Ethernet{m.group(1)}" if m else text


def _protocol(view: PortView, media: str) -> str:
    if media == "Not Present":
        return "notPresent"
    return "up" if view.oper_up else "down"


def _lane_port(port: str, lane: int, state: SwitchState) -> str | None:
    """EOS names lane N of ``EthernetX/1`` ``EthernetX/N``; None when it cannot (another
    port has that name, or the port is not an ``X/1`` port)."""
    if lane == 1:
        return port
    m = re.fullmatch(r"(Ethernet\d+)/1", port)
    name = f"{m.group(1)}/{lane}" if m else None
    return None if name is None or state.has_port(name) else name


def _peer_descr(driver: str) -> str:
    return {
        "sonic": "SONiC Software Version: SONiC (emulated)",
        "eos": "Arista Networks EOS (emulated)",
    }.get(driver, "Linux (emulated)")


def sys_descr(dev: EosDevice) -> str:
    return f"Arista Networks EOS version {dev.version()} running on an Arista {dev.model()}"


def serve(fabric: Fabric, name: str, device: Device) -> Served:
    """The lab's entry point (``PERSONALITIES["eos"]``)."""
    state = SwitchState(fabric, name, device, eos_if_index)
    dev = EosDevice(state)
    mib = SwitchMib(state, sys_descr=lambda: sys_descr(dev), sys_object_id=SYS_OBJECT_ID)
    return Served(cli=lambda: EosCli(dev), mib=mib, banner="", stop=state.stop)
