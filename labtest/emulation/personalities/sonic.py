"""SONiC personality: the sonic-utilities CLI of one switch, printed from the fabric model.

Every command prints in the layout of the real tool; the comment above each
renderer names the real output it copies (the samples kept under
``tests/drivers/samples/sonic`` and ``tests/drivers/driver_samples/sonic``).
sonic-utilities prints python-tabulate tables (see ``_text.table``) with
thousands separators in counters.

Privilege works as on a real box: ``config``, ``pfcwd`` and ``reboot`` need
``sudo`` ("Root privileges are required for this operation"); an unknown
``show`` subcommand gets click's usage error (exit 2), an unknown program
bash's "command not found" (exit 127). Command words may be abbreviated as
SONiC's aliased click groups allow (``show int counters``).

Device-level state (saved config files, the ``sonic-clear`` baselines, PRBS
runs, rate samples) lives in :class:`SonicDevice`, shared by all sessions.
"""

from __future__ import annotations

import json
import shlex
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from labtest.emulation.lab import Served
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import (
    PRIORITIES,
    STARTUP,
    PortView,
    QueueView,
    SwitchState,
)
from labtest.emulation.personalities._clock import date_output, epoch_s
from labtest.emulation.personalities._routing import routing_command
from labtest.emulation.personalities._text import (
    commas,
    expand,
    first_number,
    hms,
    procps_uptime,
    sci_superscript,
    table,
)
from labtest.emulation.personalities.switch_mib import SwitchMib
from labtest.emulation.sshserver import CliReply
from labtest.testbed.model import Device

DEFAULT_VERSION = "SONiC.202405.35-b4c2f0a1"
DEFAULT_PLATFORM = "x86_64-mlnx_msn4700-r0"
DEFAULT_HWSKU = "ACS-MSN4700"
DEFAULT_MODEL = "MSN4700-WS2FO"
DEFAULT_ASIC = "mellanox"
CONFIG_DB = "/etc/sonic/config_db.json"
ROOT_REQUIRED = "Root privileges are required for this operation"
SYS_OBJECT_ID = (1, 3, 6, 1, 4, 1, 8072, 3, 2, 10)  # net-snmp "linux", what SONiC reports
RATE_MIN_DT_S = 0.5  # a rate needs two counter samples at least this far apart
MODULE_TYPES = {  # SFF-8024 identifier names as sfputil prints them
    "QSFP-DD": "QSFP-DD Double Density 8X Pluggable Transceiver",
    "OSFP": "OSFP 8X Pluggable Transceiver",
    "QSFP28": "QSFP28 or later",
}
_DOCKER_IMAGES = [  # `docker images` layout, as "show version" appends it
    "REPOSITORY                    TAG                             IMAGE ID       SIZE",
    "docker-syncd-mlnx             latest                          ddd49cfcb0fd   755MB",
    "docker-orchagent              latest                          4e1f3c2a9b10   312MB",
    "docker-lldp                   latest                          9681bbfea3ac   298MB",
    "docker-snmp                   latest                          e2776e2a30b7   309MB",
]
CONNECTORS = {"MPO-12": "MPO 1x12", "MPO-16": "MPO 1x16", "LC": "LC"}


def sonic_if_index(port: str) -> int | None:
    """sonic-snmpagent numbers ``EthernetN`` as ifIndex N+1."""
    n = first_number(port)
    return n + 1 if port.startswith("Ethernet") and n is not None else None


@dataclass
class PrbsRun:
    mode: str  # rx | tx | both
    pattern: str
    start_s: float
    stop_s: float | None = None
    lanes: list[Any] | None = None  # fabric PrbsLane records captured at disable


@dataclass
class SonicDevice:
    """One SONiC switch: its shared state plus what sonic-utilities keeps on disk."""

    state: SwitchState
    cleared: dict[str, dict[str, int]] = field(default_factory=dict)  # sonic-clear counters
    cleared_at: str | None = None
    pfc_cleared: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)
    prbs: dict[str, PrbsRun] = field(default_factory=dict)
    rates: dict[str, tuple[float, PortView]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def fabric(self) -> Fabric:
        return self.state.fabric

    def version(self) -> str:
        fw = self.fabric.device_facts(self.name).firmware_version
        if not fw:
            return DEFAULT_VERSION
        return fw if fw.startswith("SONiC.") else f"SONiC.{fw}"


# --- command-word abbreviations (SONiC's AliasedGroup) ----------------------------------

_TREE: dict[str, Any] = {
    "show": {
        "version": {},
        "platform": {"summary": {}},
        "interfaces": {
            "status": {},
            "counters": {"errors": {}, "fec-stats": {}, "fec-histogram": {}},
            "transceiver": {"eeprom": {}, "pm": {}},
            "prbs": {"status": {}},
        },
        "pfc": {"counters": {}},
        "queue": {"counters": {}, "wredcounters": {}},
        "lldp": {"table": {}},
        "pfcwd": {"stats": {}, "config": {}},
        "runningconfiguration": {"all": {}},
    },
    "config": {
        "interface": {"shutdown": {}, "startup": {}, "pfc": {"priority": {}}, "prbs": {}},
        "save": {},
        "reload": {},
    },
    "pfcwd": {"start": {}, "stop": {}},
    "sonic-clear": {"counters": {}, "pfccounters": {}},
}
_ALIASES = {"interface": "interfaces", "int": "interfaces"}


# --- the CLI ------------------------------------------------------------------------


class SonicCli:
    """One SSH channel's view of the switch (a fresh one per exec or shell)."""

    def __init__(self, dev: SonicDevice) -> None:
        self.dev = dev
        self.state = dev.state
        self._user = str(dev.state.device.ssh.username) if dev.state.device.ssh else "admin"

    @property
    def prompt(self) -> str:
        return f"{self._user}@{self.state.name}:~$ "

    def run(self, command: str) -> CliReply:
        line = command.strip()
        if line in ("exit", "logout"):
            return CliReply("", close=True)
        try:
            words = shlex.split(line)
        except ValueError:
            return CliReply("", 2, "-bash: syntax error: unterminated quoted string\n")
        sudo = bool(words) and words[0] == "sudo"
        if sudo:
            words = words[1:]
        if not words:
            return CliReply("")
        program = words[0]
        if program == "reboot":
            return self._reboot(sudo)
        if program == "date":  # SONiC's Linux shell; the clock runs at the fabric's pace
            out, err, status = date_output(words[1:], epoch_s(self.dev.fabric))
            return CliReply(out, status, err)
        if program in ("vtysh", "ip"):  # FRR in the bgp container; iproute2 on the host
            out, err, status = routing_command(self.dev.fabric, self.state.name, words)
            return CliReply(out, status, err)
        if program not in _TREE:
            return CliReply("", 127, f"-bash: {program}: command not found\n")
        if program in ("config", "pfcwd") and not sudo:
            return CliReply("", 1, f"{ROOT_REQUIRED}\n")
        path, used, unknown = expand(words, _TREE, _ALIASES)
        if unknown is not None:
            return _no_such_command(path, unknown)
        handler = _HANDLERS.get(" ".join(path))
        if handler is None:
            return _usage_missing(path)
        try:
            return handler(self, words[used:])
        except _CliError as exc:
            return CliReply("", exc.status, exc.text)

    # --- system ------------------------------------------------------------------------

    # format: show_version__arista7060x6_master2025 (SONiC master, 2025) and
    # show_version__cmdref_sn2700 (sonic-utilities Command-Reference.md)
    def show_version(self, args: list[str]) -> CliReply:
        state, facts = self.state, self.dev.fabric.device_facts(self.state.name)
        version = self.dev.version()
        commit = (
            version.rsplit("-", 1)[1][:9]
            if "-" in version
            else (f"{zlib.crc32(version.encode()):08x}")
        )
        now = datetime.now(UTC)
        load = "0.52, 0.58, 0.59"
        lines = [
            "",
            f"SONiC Software Version: {version}",
            "SONiC OS Version: 12",
            "Distribution: Debian 12.11",
            "Kernel: 6.1.0-29-2-amd64",
            f"Build commit: {commit}",
            "Build date: Thu Jul 31 07:48:38 UTC 2025",
            "Built by: labtest@emulator",
            "",
            f"Platform: {state.var('platform', DEFAULT_PLATFORM)}",
            f"HwSKU: {state.var('hwsku', DEFAULT_HWSKU)}",
            f"ASIC: {state.var('asic', DEFAULT_ASIC)}",
            "ASIC Count: 1",
            f"Serial Number: {facts.serial}",
            f"Model Number: {state.var('model', DEFAULT_MODEL)}",
            f"Hardware Revision: {state.var('hardware_rev', 'A1')}",
            f"Uptime: {now:%H:%M:%S} up {procps_uptime(state.uptime_s())},  1 user,  "
            f"load average: {load}",
            f"Date: {now:%a %d %b %Y %H:%M:%S}",
            "",
            "Docker images:",
            *_DOCKER_IMAGES,
        ]
        return _ok(lines)

    # format: show_platform_summary__dx010_202105 (keys as SONiC 202105+ prints them)
    def show_platform_summary(self, args: list[str]) -> CliReply:
        state, facts = self.state, self.dev.fabric.device_facts(self.state.name)
        return _ok(
            [
                f"Platform: {state.var('platform', DEFAULT_PLATFORM)}",
                f"HwSKU: {state.var('hwsku', DEFAULT_HWSKU)}",
                f"ASIC: {state.var('asic', DEFAULT_ASIC)}",
                "ASIC Count: 1",
                f"Serial Number: {facts.serial}",
                f"Model Number: {state.var('model', DEFAULT_MODEL)}",
                f"Hardware Revision: {state.var('hardware_rev', 'A1')}",
            ]
        )

    # --- interfaces --------------------------------------------------------------------

    def _ports(self, args: list[str]) -> list[str]:
        """The ports an optional PORT argument selects (all of them without one)."""
        names = [a for a in args if not a.startswith("-")]
        if not names:
            return list(self.state.ports)
        wanted = names[0].split(",")
        for port in wanted:
            if not self.state.has_port(port):
                raise _CliError(f"Invalid port {port}\n", 1)
        return wanted

    # format: show_interfaces_status__pr764_fec_vlan (columns incl. FEC) and
    # show_interfaces_status__issue4653_400g (400G QSFP-DD row)
    def show_interfaces_status(self, args: list[str]) -> CliReply:
        rows = []
        for port in self._ports(args):
            st = self.dev.fabric.interface(self.state.name, port)
            optic = self.dev.fabric.transceiver(self.state.name, port)
            rows.append(
                [
                    port,
                    _lanes(port, st.speed_gbps),
                    f"{int(st.speed_gbps)}G",
                    st.mtu_bytes,
                    "rs",
                    _alias(self.state, port),
                    "routed",
                    "up" if st.oper_up else "down",
                    "up" if st.admin_up else "down",
                    MODULE_TYPES.get(optic.form_factor, "N/A") if optic.present else "N/A",
                    "N/A",
                ]
            )
        headers = [
            "Interface",
            "Lanes",
            "Speed",
            "MTU",
            "FEC",
            "Alias",
            "Vlan",
            "Oper",
            "Admin",
            "Type",
            "Asym PFC",
        ]
        return _ok([table(headers, rows)])

    def _counted(self, view: PortView) -> dict[str, int]:
        """Interface counters minus the ``sonic-clear counters`` baseline."""
        now = _counter_values(view)
        base = self.dev.cleared.get(view.name, {})
        return {k: max(v - base.get(k, 0), 0) for k, v in now.items()}

    def _rates(self, view: PortView) -> tuple[float, float, float, float]:
        """(rx B/s, tx B/s, rx pkt/s, tx pkt/s) from the previous sample of this port."""
        with self.dev.lock:
            previous = self.dev.rates.get(view.name)
            if previous is None or view.time_s - previous[0] >= RATE_MIN_DT_S:
                self.dev.rates[view.name] = (view.time_s, view)
        if previous is None or view.time_s <= previous[0]:
            return 0.0, 0.0, 0.0, 0.0
        dt, old = view.time_s - previous[0], previous[1]
        return (
            max(view.rx_octets - old.rx_octets, 0) / dt,
            max(view.tx_octets - old.tx_octets, 0) / dt,
            max(view.rx_packets - old.rx_packets, 0) / dt,
            max(view.tx_packets - old.tx_packets, 0) / dt,
        )

    # format: show_interfaces_counters__cmdref (portstat), -a/--printall:
    # show_interfaces_counters_a__portstat_test_printall, errors:
    # show_interfaces_counters_errors__cmdref_s6000
    def show_interfaces_counters(self, args: list[str]) -> CliReply:
        printall = "-a" in args or "--printall" in args
        rows = []
        for view in (self.state.port_view(p) for p in self._ports(args)):
            c = self._counted(view)
            rx_bps, tx_bps, rx_pps, tx_pps = self._rates(view)
            speed_bps = view.speed_gbps * 1e9
            row: list[object] = [view.name, _state_letter(view), commas(c["rx_ok"]), _brate(rx_bps)]
            row += [f"{rx_pps:.2f}/s"] if printall else []
            row += [
                _util(rx_bps, speed_bps),
                commas(c["rx_err"]),
                commas(c["rx_drp"]),
                commas(0),
                commas(c["tx_ok"]),
                _brate(tx_bps),
            ]
            row += [f"{tx_pps:.2f}/s"] if printall else []
            row += [_util(tx_bps, speed_bps), commas(c["tx_err"]), commas(c["tx_drp"]), commas(0)]
            row += ["0"] if printall else []
            rows.append(row)
        headers = ["IFACE", "STATE", "RX_OK", "RX_BPS"]
        headers += ["RX_PPS"] if printall else []
        headers += ["RX_UTIL", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK", "TX_BPS"]
        headers += ["TX_PPS"] if printall else []
        headers += ["TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR"]
        headers += ["TRIM"] if printall else []
        return _ok([*self._cache_banner(), table(headers, rows)])

    def _cache_banner(self) -> list[str]:
        return [f"Last cached time was {self.dev.cleared_at}"] if self.dev.cleared_at else []

    def show_interfaces_counters_errors(self, args: list[str]) -> CliReply:
        rows = []
        for view in (self.state.port_view(p) for p in self._ports(args)):
            c = self._counted(view)
            rows.append(
                [
                    view.name,
                    _state_letter(view),
                    commas(c["rx_err"]),
                    commas(c["rx_drp"]),
                    commas(0),
                    commas(c["tx_err"]),
                    commas(c["tx_drp"]),
                    commas(0),
                ]
            )
        headers = ["IFACE", "STATE", "RX_ERR", "RX_DRP", "RX_OVR", "TX_ERR", "TX_DRP", "TX_OVR"]
        return _ok([*self._cache_banner(), table(headers, rows)])

    # format: fec_stats__pr4124_ber_flr (202505: BER and FLR columns)
    def show_fec_stats(self, args: list[str]) -> CliReply:
        rows = []
        for view in (self.state.port_view(p) for p in self._ports(args)):
            if not view.optic:
                rows.append([view.name, _state_letter(view), *["N/A"] * 7])
                continue
            fec = self.dev.fabric.fec(self.state.name, view.name)
            base = self.dev.cleared.get(view.name, {})
            corr = max(fec.corrected_codewords - base.get("fec_corr", 0), 0)
            unc = max(fec.uncorrectable_codewords - base.get("fec_uncorr", 0), 0)
            sym = max(fec.symbol_errors - base.get("fec_symbol", 0), 0)
            total = max(fec.total_codewords - base.get("fec_total", 0), 0)
            # post-FEC: the share of codewords RS(544,514) could not correct
            post = unc / total if total else 0.0
            flr = f"{post:.2e}" if unc else "0"
            rows.append(
                [
                    view.name,
                    _state_letter(view),
                    commas(corr),
                    commas(unc),
                    commas(sym),
                    f"{fec.pre_fec_ber:.2e}",
                    f"{post:.2e}",
                    flr,
                    "N/A",
                ]
            )
        headers = [
            "IFACE",
            "STATE",
            "FEC_CORR",
            "FEC_UNCORR",
            "FEC_SYMBOL_ERR",
            "FEC_PRE_BER",
            "FEC_POST_BER",
            "FLR(O)",
            "FLR(P) (Accuracy)",
        ]
        return _ok([*self._cache_banner(), table(headers, rows)])

    # format: fec_histogram__swss3919_eth48 (one port) and
    # fec_histogram__portstat_fh_table (every port, "portstat -fh")
    def show_fec_histogram(self, args: list[str]) -> CliReply:
        names = [a for a in args if not a.startswith("-")]
        if names:
            port = self._ports(names)[0]
            bins = self._bins(port)
            rows = [[f"BIN{i}", "N/A" if b is None else b] for i, b in enumerate(bins)]
            return _ok(
                [table(["Symbol Errors Per Codeword", "Codewords"], rows, align=["left", "right"])]
            )
        rows = []
        for port in self.state.ports:
            rows.append([port, *(commas(b) for b in self._bins(port))])
        headers = ["IFACE", *(f"BIN{i}" for i in range(16))]
        return _ok([table(headers, rows)])

    def _bins(self, port: str) -> list[int | None]:
        if not self.dev.fabric.interface(self.state.name, port).optic:
            return [None] * 16
        return list(self.dev.fabric.fec(self.state.name, port).bins)

    # --- PFC, queues, watchdog -------------------------------------------------------

    # format: show_pfc_counters__pfcstat_test (pfcstat, "Port Rx"/"Port Tx" tables)
    def show_pfc_counters(self, args: list[str]) -> CliReply:
        rx_rows, tx_rows = [], []
        for view in (self.state.port_view(p) for p in self._ports(args)):
            base_rx, base_tx = self.dev.pfc_cleared.get(view.name, ((0,) * 8, (0,) * 8))
            rx = [max(v - b, 0) for v, b in zip(view.pfc_rx_frames, base_rx, strict=True)]
            tx = [max(v - b, 0) for v, b in zip(view.pfc_tx_frames, base_tx, strict=True)]
            rx_rows.append([view.name, *(commas(v) for v in rx)])
            tx_rows.append([view.name, *(commas(v) for v in tx)])
        pfc = [f"PFC{i}" for i in range(PRIORITIES)]
        return _ok([table(["Port Rx", *pfc], rx_rows), "", table(["Port Tx", *pfc], tx_rows)])

    # format: show_queue_counters__cmdref (one block per port, UC then MC queues)
    def show_queue_counters(self, args: list[str]) -> CliReply:
        blocks = []
        headers = ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes"]
        for view in (self.state.port_view(p) for p in self._ports(args)):
            rows = []
            for q in _queues(view):
                avg = q.tx_bytes / q.tx_packets if q.tx_packets else 0.0
                rows.append(
                    [
                        view.name,
                        f"UC{q.priority}",
                        commas(q.tx_packets),
                        commas(q.tx_bytes),
                        commas(q.drop_packets),
                        commas(round(q.drop_packets * avg)),
                    ]
                )
            rows += [
                [view.name, f"MC{PRIORITIES + i}", "0", "0", "0", "0"] for i in range(PRIORITIES)
            ]
            blocks.append(table(headers, rows))
        return _ok(["\n\n".join(blocks)])

    # format: show_queue_wredcounters__sonic_mgmt_s6100_ecn (WRED drops and ECN marks)
    def show_queue_wredcounters(self, args: list[str]) -> CliReply:
        blocks = []
        headers = [
            "Port",
            "TxQ",
            "WredDrp/pkts",
            "WredDrp/bytes",
            "EcnMarked/pkts",
            "EcnMarked/bytes",
        ]
        for view in (self.state.port_view(p) for p in self._ports(args)):
            rows = []
            for q in _queues(view):
                avg = q.tx_bytes / q.tx_packets if q.tx_packets else 0.0
                # the model marks instead of dropping early: WRED drops stay 0
                rows.append(
                    [
                        view.name,
                        f"UC{q.priority}",
                        "0",
                        "0",
                        commas(q.ecn_marked_packets),
                        commas(round(q.ecn_marked_packets * avg)),
                    ]
                )
            blocks.append(table(headers, rows))
        return _ok(["\n\n".join(blocks)])

    # format: pfcwd_stats__pfcwd_test_vectors (combined A/B columns); a stopped
    # watchdog shows N/A as status (pfcwd_stats__pr682_stopped)
    def show_pfcwd_stats(self, args: list[str]) -> CliReply:
        traffic = getattr(self.dev.fabric, "traffic", None)
        stats = traffic.pfcwd_stats(self.state.name) if traffic is not None else []
        running = self.state.pfcwd_enabled()
        rows = []
        for s in stats:
            port = s.endpoint.partition(":")[2]
            rows.append(
                [
                    f"{port}:{s.priority}",
                    s.status if running else "N/A",
                    f"{s.storm_detected}/{s.storm_restored}",
                    f"{s.tx_ok}/{s.tx_drop}",
                    f"{s.rx_ok}/{s.rx_drop}",
                    "0/0",
                    "0/0",
                ]
            )
        headers = [
            "QUEUE",
            "STATUS",
            "STORM DETECTED/RESTORED",
            "TX OK/DROP",
            "RX OK/DROP",
            "TX LAST OK/DROP",
            "RX LAST OK/DROP",
        ]
        return _ok([table(headers, rows)])

    # format: pfcwd_config__issue9193_z9332 (polling-interval line, then the table)
    def show_pfcwd_config(self, args: list[str]) -> CliReply:
        wd = self.state.pfcwd
        rows = []
        if self.state.pfcwd_enabled():
            rows = [
                [p, wd.action, wd.detection_ms, wd.restoration_ms]
                for p in self.state.ports
                if self.dev.fabric.interface(self.state.name, p).link
            ]
        headers = ["PORT", "ACTION", "DETECTION TIME", "RESTORATION TIME"]
        return _ok([f"Changed polling interval to {wd.poll_ms}ms", table(headers, rows)])

    # --- transceivers ------------------------------------------------------------------

    # format: eeprom_dom__sfp_test_cmis_qsfpdd (sfputil CMIS layout, sorted keys,
    # threshold keys padded to the longest)
    def show_transceiver_eeprom(self, args: list[str]) -> CliReply:
        dom = "--dom" in args or "-d" in args
        blocks = [self._eeprom(port, dom) for port in self._ports(args)]
        return _ok(["\n\n".join(blocks)])

    def _eeprom(self, port: str, with_dom: bool) -> str:
        fabric = self.dev.fabric
        inv = fabric.transceiver(self.state.name, port)
        if not inv.present:
            return f"{port}: SFP EEPROM Not detected"
        st = fabric.interface(self.state.name, port)
        host_lanes = 8
        app = (
            f"{int(st.speed_gbps)}GAUI-{host_lanes} C2M (Annex 120E) - Host Assign (0x1) - "
            f"{inv.standard} - Media Assign (0x1)"
        )
        info = {
            "Active Firmware": inv.firmware_version,
            **{
                f"Active application selected code assigned to host lane {i}": "1"
                for i in range(1, host_lanes + 1)
            },
            "Application Advertisement": app,
            "CMIS Rev": "5.0",
            "Connector": CONNECTORS.get(inv.connector, inv.connector),
            "Encoding": "Not supported for CMIS cables",
            "Extended Identifier": f"Power Class 1({inv.power_w:.1f}W Max)",
            "Extended RateSelect Compliance": "Not supported for CMIS cables",
            "Host Lane Count": str(host_lanes),
            "Identifier": MODULE_TYPES.get(inv.form_factor, inv.form_factor),
            "Inactive Firmware": inv.firmware_version,
            "Length Cable Assembly(m)": "0.0",
            "Media Interface Technology": "1310 nm EML",
            "Media Lane Count": str(inv.lanes),
            "Module Hardware Rev": inv.hardware_rev,
            "Nominal Bit Rate(100Mbs)": "Not supported for CMIS cables",
            "Specification compliance": "sm_media_interface",
            "Vendor Date Code(YYYY-MM-DD Lot)": inv.date_code,
            "Vendor Name": inv.vendor,
            "Vendor OUI": inv.vendor_oui,
            "Vendor PN": inv.part_number,
            "Vendor Rev": inv.hardware_rev,
            "Vendor SN": inv.serial,
        }
        lines = [f"{port}: SFP EEPROM detected"]
        lines += [f"        {k}: {v}" for k, v in info.items()]
        if with_dom:
            lines += self._dom_lines(port)
        return "\n".join(lines)

    def _dom_lines(self, port: str) -> list[str]:
        fabric = self.dev.fabric
        dom = fabric.dom(self.state.name, port)
        th = fabric.dom_thresholds(self.state.name, port)
        channel: dict[str, str] = {}
        for lane in dom.lanes:
            channel[f"RX{lane.lane}Power"] = f"{lane.rx_power_dbm:.4f}dBm"
            channel[f"TX{lane.lane}Bias"] = f"{lane.bias_ma:.4f}mA"
            channel[f"TX{lane.lane}Power"] = f"{lane.tx_power_dbm:.4f}dBm"

        def levels(prefix: str, t: Any, unit: str) -> dict[str, str]:
            return {
                f"{prefix}HighAlarm": f"{t.high_alarm:.4f}{unit}",
                f"{prefix}HighWarning": f"{t.high_warning:.4f}{unit}",
                f"{prefix}LowAlarm": f"{t.low_alarm:.4f}{unit}",
                f"{prefix}LowWarning": f"{t.low_warning:.4f}{unit}",
            }

        channel_th = {
            **levels("RxPower", th.rx_power_dbm, "dBm"),
            **levels("TxBias", th.bias_ma, "mA"),
            **levels("TxPower", th.tx_power_dbm, "dBm"),
        }
        module_th = {
            **levels("Temp", th.temperature_c, "C"),
            **levels("Vcc", th.voltage_v, "Volts"),
        }
        out = ["        ChannelMonitorValues:"]
        out += [f"                {k}: {channel[k]}" for k in sorted(channel, key=_lane_key)]
        out += ["        ChannelThresholdValues:", *_padded(channel_th)]
        out += [
            "        ModuleMonitorValues:",
            f"                Temperature: {dom.temperature_c:.4f}C",
            f"                Vcc: {dom.voltage_v:.4f}Volts",
        ]
        out += ["        ModuleThresholdValues:", *_padded(module_th)]
        return out

    # format: sonic-mgmt's transceiver test docstring ("Ethernet0: Transceiver performance
    # monitoring not applicable") and sfp_test.py test_qsfp_dd_pm_all_output: only coherent
    # (C-CMIS, 400ZR) modules report PM; the catalogue has none
    def show_transceiver_pm(self, args: list[str]) -> CliReply:
        lines = [
            f"{p}: Transceiver performance monitoring not applicable" for p in self._ports(args)
        ]
        return _ok(["\n\n".join(lines)])

    # --- LLDP --------------------------------------------------------------------------

    # format: lldp_table__cmdref (left-aligned tabulate, rule and total line)
    def show_lldp_table(self, args: list[str]) -> CliReply:
        rows = []
        for n in sorted(
            self.dev.fabric.lldp_neighbours(self.state.name),
            key=lambda n: self.state.if_index[n.local_port],
        ):
            peer = self.dev.fabric.testbed.devices.get(n.system_name)
            caps = "BR" if peer is not None and peer.driver in ("sonic", "eos") else "O"
            rows.append([n.local_port, n.system_name, n.port_id, caps, n.port_description])
        headers = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"]
        return _ok(
            [
                "Capability codes: (R) Router, (B) Bridge, (O) Other",
                table(headers, rows, align="left"),
                "-" * 50,
                f"Total entries displayed:  {len(rows)}",
            ]
        )

    # --- running configuration -------------------------------------------------------

    # format: CONFIG_DB as ``sonic-cfggen -d --print-data`` prints it (indent 4, sorted)
    def show_running_configuration(self, args: list[str]) -> CliReply:
        return _ok([json.dumps(config_db(self.dev), indent=4, sort_keys=True)])

    # --- PRBS (SONiC PRBS per-lane HLD) ---------------------------------------------------

    # format: prbs_status__mgmt25213_ethernet128 (per-lane table after a run) and
    # prbs_status__hld_running ("Note: No PRBS result data available" while running)
    def show_prbs_status(self, args: list[str]) -> CliReply:
        if "-i" not in args or args.index("-i") + 1 >= len(args):
            return self._prbs_summary()
        port = args[args.index("-i") + 1]
        if not self.state.has_port(port):
            raise _CliError(f"Error: Interface {port} not found\n", 1)
        run = self.dev.prbs.get(port)
        if run is None:
            return _ok([f"Error: No PRBS test data found for {port}"])
        now = self.dev.fabric.now_s()
        status = "Running" if run.stop_s is None else "Completed"
        duration = hms((run.stop_s if run.stop_s is not None else now) - run.start_s)
        header = (
            f"Interface: {port} | Mode: {run.mode} | Pattern: {run.pattern} | "
            f"Status: {status} | Duration: {duration}"
        )
        if run.mode == "tx":
            return _ok(
                [
                    f"Interface:       {port}",
                    f"Mode:            {run.mode}",
                    f"Pattern:         {run.pattern}",
                    f"Status:          {status}",
                    f"Duration:        {duration}",
                    "Note:            TX mode does not capture PRBS results",
                ]
            )
        if run.lanes is None:
            return _ok([header, "", "Note: No PRBS result data available"])
        rows = []
        for lane in run.lanes:
            rx_status = _prbs_rx_status(lane)
            lock = "Locked" if rx_status in ("OK", "LOCK_WITH_ERRORS") else "Not Locked"
            rows.append([lane.lane - 1, lock, rx_status, lane.errors, sci_superscript(lane.ber)])
        headers = ["Lane", "Lock", "RX Status", "Errors", "BER"]
        aligns = ["right", "left", "left", "right", "left"]
        return _ok([header, "", table(headers, rows, align=aligns)])

    def _prbs_summary(self) -> CliReply:
        rows = []
        now = self.dev.fabric.now_s()
        for port, run in sorted(self.dev.prbs.items()):
            status = "Running" if run.stop_s is None else "Completed"
            end = run.stop_s if run.stop_s is not None else now
            rows.append(
                [
                    port,
                    run.mode,
                    run.pattern,
                    status,
                    "--",
                    "--",
                    "--",
                    "--",
                    hms(end - run.start_s),
                ]
            )
        headers = [
            "Interface",
            "Mode",
            "Pattern",
            "Status",
            "RX Status",
            "Error Count",
            "BER",
            "Start Time",
            "Duration",
        ]
        return _ok([table(headers, rows, align="left")])

    def config_prbs(self, args: list[str]) -> CliReply:
        if len(args) < 2 or args[1] not in ("enable", "disable"):
            raise _CliError(
                _usage(
                    "config interface prbs", "<interface_name> [enable|disable]", "Missing argument"
                ),
                2,
            )
        port, action = args[0], args[1]
        self._check_port(port, "config interface prbs")
        fabric, name = self.dev.fabric, self.state.name
        run = self.dev.prbs.get(port)
        if action == "enable":
            if run is not None and run.stop_s is None:
                raise _CliError(f"Error: PRBS is already enabled on {port}\n", 1)
            mode = _option(args, "--mode", "rx")
            pattern = _option(args, "--pattern", "none")
            if mode not in ("rx", "tx", "both"):
                raise _CliError(f'Error: Invalid value for "--mode": invalid choice: {mode}\n', 2)
            model_pattern = "PRBS31Q" if pattern == "none" else pattern
            fabric.prbs_start(
                name,
                port,
                model_pattern,
                generator=mode in ("tx", "both"),
                checker=mode in ("rx", "both"),
            )
            self.dev.prbs[port] = PrbsRun(mode, pattern, fabric.now_s())
            return _ok([])
        if run is None or run.stop_s is not None:
            raise _CliError(f"Error: PRBS is not enabled on {port}\n", 1)
        if run.mode in ("rx", "both"):
            run.lanes = fabric.prbs_read(name, port)  # captured at disable, as SONiC does
        run.stop_s = fabric.now_s()
        fabric.prbs_stop(name, port)
        return _ok([])

    # --- configuration ---------------------------------------------------------------

    def _check_port(self, port: str, command: str) -> None:
        if not self.state.has_port(port):
            raise _CliError(
                _usage(
                    command,
                    "<interface_name>",
                    "Interface name is invalid. Please enter a valid interface name!!",
                ),
                2,
            )

    def config_admin(self, up: bool) -> Callable[[list[str]], CliReply]:
        def handler(args: list[str]) -> CliReply:
            verb = "startup" if up else "shutdown"
            if not args:
                raise _CliError(
                    _usage(
                        f"config interface {verb}",
                        "<interface_name>",
                        'Missing argument "<interface_name>".',
                    ),
                    2,
                )
            for port in args[0].split(","):
                self._check_port(port, f"config interface {verb}")
            for port in args[0].split(","):
                self.dev.fabric.set_admin(self.state.name, port, up)
            return _ok([])

        return handler

    def config_pfc_priority(self, args: list[str]) -> CliReply:
        if len(args) != 3 or args[2] not in ("on", "off") or not args[1].isdigit():
            raise _CliError(
                _usage(
                    "config interface pfc priority",
                    "<interface_name> <priority> <status>",
                    "Missing argument or invalid value.",
                ),
                2,
            )
        self._check_port(args[0], "config interface pfc priority")
        priority = int(args[1])
        if not 0 <= priority < PRIORITIES:
            raise _CliError(f"Error: Invalid priority {priority}\n", 1)
        self.state.set_pfc(priority, args[2] == "on")
        return _ok([])

    def config_save(self, args: list[str]) -> CliReply:
        if "-y" not in args:
            return _ok(
                ["Existing files will be overwritten, continue? [y/N]: ", "Aborted!"], status=1
            )
        path = next((a for a in args if not a.startswith("-")), CONFIG_DB)
        self.state.save(_config_key(path))
        return _ok([f"Running command: /usr/local/bin/sonic-cfggen -d --print-data > {path}"])

    # format: ``config reload -y`` log lines of sonic-utilities 202x
    def config_reload(self, args: list[str]) -> CliReply:
        if "-y" not in args:
            return _ok(
                [
                    "Clear current config and reload config in config_db format from "
                    "the default config file(s) ? [y/N]: ",
                    "Aborted!",
                ],
                status=1,
            )
        path = next((a for a in args if not a.startswith("-")), CONFIG_DB)
        if not self.state.load(_config_key(path)):
            raise _CliError(f"Error: File {path} does not exist!\n", 1)
        return _ok(
            [
                "Acquired lock on /etc/sonic/reload.lock",
                "Disabling container monitoring ...",
                "Stopping SONiC target ...",
                f"Running command: /usr/local/bin/sonic-cfggen -j {path} --write-to-db",
                "Running command: /usr/local/bin/db_migrator.py -o migrate",
                "Restarting SONiC target ...",
                "Enabling container monitoring ...",
                "Reloading Monit configuration ...",
                "Reinitializing monit daemon",
                "Released lock on /etc/sonic/reload.lock",
            ]
        )

    def pfcwd_start(self, args: list[str]) -> CliReply:
        action = _option(args, "--action", self.state.pfcwd.action)
        restoration = _option(args, "--restoration-time", "")
        rest = [a for a in _without_options(args, ("--action", "--restoration-time"))]
        if not rest or not rest[-1].isdigit():
            raise _CliError(
                _usage(
                    "pfcwd start",
                    "[OPTIONS] [PORTS]... DETECTION_TIME",
                    'Missing argument "DETECTION_TIME".',
                ),
                2,
            )
        if action not in ("drop", "forward", "alert"):
            raise _CliError(f'Error: Invalid value for "--action": invalid choice: {action}\n', 2)
        for port in rest[:-1]:
            if port != "all":
                self._check_port(port, "pfcwd start")
        wd = self.state.pfcwd
        wd.action = action
        wd.detection_ms = int(rest[-1])
        wd.restoration_ms = int(restoration) if restoration.isdigit() else wd.detection_ms
        self.state.set_pfcwd(True)  # the model's watchdog is per switch, not per port
        return _ok([])

    def pfcwd_stop(self, args: list[str]) -> CliReply:
        self.state.set_pfcwd(False)
        return _ok([])

    def sonic_clear_counters(self, args: list[str]) -> CliReply:
        cleared: dict[str, dict[str, int]] = {}
        for view in self.state.views():
            values = _counter_values(view)
            if view.optic:
                fec = self.dev.fabric.fec(self.state.name, view.name)
                values |= {
                    "fec_corr": fec.corrected_codewords,
                    "fec_uncorr": fec.uncorrectable_codewords,
                    "fec_symbol": fec.symbol_errors,
                    "fec_total": fec.total_codewords,
                }
            cleared[view.name] = values
        self.dev.cleared = cleared
        self.dev.cleared_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        return _ok(["Cleared counters"])

    def sonic_clear_pfc(self, args: list[str]) -> CliReply:
        self.dev.pfc_cleared = {
            v.name: (v.pfc_rx_frames, v.pfc_tx_frames) for v in self.state.views()
        }
        return _ok(["Cleared PFC counters"])

    def _reboot(self, sudo: bool) -> CliReply:
        if not sudo:
            return CliReply("", 1, "This command must be run as root\n")
        self.state.reboot()
        return _ok(["User requested rebooting device ...", "Rebooting with platform reboot ..."])


# --- dispatch table -------------------------------------------------------------------

Handler = Callable[[SonicCli, list[str]], CliReply]


_HANDLERS: dict[str, Handler] = {
    "show version": SonicCli.show_version,
    "show platform summary": SonicCli.show_platform_summary,
    "show interfaces status": SonicCli.show_interfaces_status,
    "show interfaces counters": SonicCli.show_interfaces_counters,
    "show interfaces counters errors": SonicCli.show_interfaces_counters_errors,
    "show interfaces counters fec-stats": SonicCli.show_fec_stats,
    "show interfaces counters fec-histogram": SonicCli.show_fec_histogram,
    "show interfaces transceiver eeprom": SonicCli.show_transceiver_eeprom,
    "show interfaces transceiver pm": SonicCli.show_transceiver_pm,
    "show interfaces prbs status": SonicCli.show_prbs_status,
    "show pfc counters": SonicCli.show_pfc_counters,
    "show queue counters": SonicCli.show_queue_counters,
    "show queue wredcounters": SonicCli.show_queue_wredcounters,
    "show lldp table": SonicCli.show_lldp_table,
    "show pfcwd stats": SonicCli.show_pfcwd_stats,
    "show pfcwd config": SonicCli.show_pfcwd_config,
    "show runningconfiguration all": SonicCli.show_running_configuration,
    "config interface shutdown": lambda cli, args: cli.config_admin(False)(args),
    "config interface startup": lambda cli, args: cli.config_admin(True)(args),
    "config interface pfc priority": SonicCli.config_pfc_priority,
    "config interface prbs": SonicCli.config_prbs,
    "config save": SonicCli.config_save,
    "config reload": SonicCli.config_reload,
    "pfcwd start": SonicCli.pfcwd_start,
    "pfcwd stop": SonicCli.pfcwd_stop,
    "sonic-clear counters": SonicCli.sonic_clear_counters,
    "sonic-clear pfccounters": SonicCli.sonic_clear_pfc,
}


# --- helpers ----------------------------------------------------------------------------


class _CliError(Exception):
    def __init__(self, text: str, status: int) -> None:
        super().__init__(text)
        self.text, self.status = text, status


def _ok(lines: list[str], status: int = 0) -> CliReply:
    text = "\n".join(lines)
    return CliReply(text + "\n" if text else "", status)


def _usage(command: str, args: str, error: str) -> str:
    """click's usage error, as sonic-utilities prints it on stderr."""
    return f'Usage: {command} [OPTIONS] {args}\nTry "{command} -h" for help.\n\nError: {error}\n'


def _no_such_command(path: list[str], word: str) -> CliReply:
    group = " ".join(path) or "show"
    text = (
        f'Usage: {group} [OPTIONS] COMMAND [ARGS]...\nTry "{group} -h" for help.\n\n'
        f'Error: No such command "{word}".\n'
    )
    return CliReply("", 2, text)


def _usage_missing(path: list[str]) -> CliReply:
    group = " ".join(path)
    return CliReply(
        "",
        2,
        f"Usage: {group} [OPTIONS] COMMAND [ARGS]...\n"
        f'Try "{group} -h" for help.\n\nError: Missing command.\n',
    )


def _option(args: list[str], name: str, default: str) -> str:
    if name in args and args.index(name) + 1 < len(args):
        return args[args.index(name) + 1]
    return default


def _without_options(args: list[str], names: tuple[str, ...]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in names:
            skip = True
        else:
            out.append(a)
    return out


def _config_key(path: str) -> str:
    return STARTUP if path == CONFIG_DB else path


def _counter_values(view: PortView) -> dict[str, int]:
    return {
        "rx_ok": view.rx_packets,
        "rx_err": view.rx_errors,
        "rx_drp": view.rx_discards,
        "tx_ok": view.tx_packets,
        "tx_err": view.tx_errors,
        "tx_drp": view.tx_discards,
    }


def _state_letter(view: PortView) -> str:
    """portstat: X = admin down, U = oper up, D = oper down."""
    if not view.admin_up:
        return "X"
    return "U" if view.oper_up else "D"


def _brate(bytes_per_s: float) -> str:
    """portstat's byte-rate format."""
    if bytes_per_s > 10e6:
        return f"{bytes_per_s / 1e6:.2f} MB/s"
    if bytes_per_s > 10e3:
        return f"{bytes_per_s / 1e3:.2f} KB/s"
    return f"{bytes_per_s:.2f} B/s"


def _util(bytes_per_s: float, speed_bps: float) -> str:
    return f"{bytes_per_s * 8 / speed_bps * 100:.2f}%" if speed_bps else "N/A"


def _lanes(port: str, speed_gbps: float) -> str:
    """Serdes lanes from the port number: 8 x 50G at 400G and above, 4 below."""
    first = first_number(port) or 0
    count = 8 if speed_gbps >= 400 else 4 if speed_gbps >= 100 else 1
    return ",".join(str(first + i) for i in range(count))


def _alias(state: SwitchState, port: str) -> str:
    return f"etp{state.ports.index(port) + 1}"


def _queues(view: PortView) -> list[QueueView]:
    """The port's unicast queues (all zero on a port the traffic model does not carry)."""
    return list(view.queues) or [QueueView(i, 0, 0, 0, 0) for i in range(PRIORITIES)]


def _lane_key(key: str) -> tuple[str, int, str]:
    """sfputil sorts channel keys as text: RX1Power..RXnPower, then TX1Bias, TX1Power, ..."""
    kind, lane, what = key[:2], int("".join(c for c in key[2:] if c.isdigit())), key[2:]
    return kind, lane, what.lstrip("0123456789")


def _padded(values: dict[str, str]) -> list[str]:
    width = max((len(k) for k in values), default=0)
    return [f"                {k.ljust(width)}: {v}" for k, v in sorted(values.items())]


def _prbs_rx_status(lane: Any) -> str:
    if lane.locked:
        return "LOCK_WITH_ERRORS" if lane.errors else "OK"
    return "LOST_LOCK" if lane.loss_of_lock_count else "NOT_LOCKED"


def config_db(dev: SonicDevice) -> dict[str, Any]:
    """The running CONFIG_DB tables the emulator models (``show runningconfiguration all``)."""
    state, fabric = dev.state, dev.fabric
    facts = fabric.device_facts(state.name)
    cfg = state.running_config()
    pfc = ",".join(str(p) for p in cfg["pfc"])
    ports, qos = {}, {}
    for index, port in enumerate(state.ports):
        st = fabric.interface(state.name, port)
        ports[port] = {
            "admin_status": "up" if cfg["admin"][port] else "down",
            "alias": _alias(state, port),
            "fec": "rs",
            "index": str(index),
            "lanes": _lanes(port, st.speed_gbps),
            "mtu": str(cfg["mtu"][port]),
            "speed": str(int(st.speed_gbps * 1000)),
        }
        if pfc:
            qos[port] = {"pfc_enable": pfc}
        if port in dev.prbs and dev.prbs[port].stop_s is None:
            ports[port] |= {
                "prbs_mode": dev.prbs[port].mode,
                "prbs_pattern": dev.prbs[port].pattern,
            }
    wd = cfg["pfcwd"]
    pfc_wd: dict[str, dict[str, str]] = {"GLOBAL": {"POLL_INTERVAL": str(wd["poll_ms"])}}
    if wd["enabled"]:
        for port in state.ports:
            if fabric.interface(state.name, port).link:
                pfc_wd[port] = {
                    "action": wd["action"],
                    "detection_time": str(wd["detection_ms"]),
                    "restoration_time": str(wd["restoration_ms"]),
                }
    role = state.device.role
    return {
        "DEVICE_METADATA": {
            "localhost": {
                "hostname": state.name,
                "hwsku": state.var("hwsku", DEFAULT_HWSKU),
                "mac": facts.base_mac,
                "platform": state.var("platform", DEFAULT_PLATFORM),
                "type": "SpineRouter" if role == "spine" else "LeafRouter",
            }
        },
        "PFC_WD": pfc_wd,
        "PORT": ports,
        "PORT_QOS_MAP": qos,
    }


def sys_descr(dev: SonicDevice) -> str:
    """sysDescr as sonic-snmpagent builds it from the version file."""
    return (
        f"SONiC Software Version: {dev.version()} - HwSku: "
        f"{dev.state.var('hwsku', DEFAULT_HWSKU)} - Distribution: Debian 12.11 - "
        f"Kernel: 6.1.0-29-2-amd64"
    )


BANNER = (
    "You are on\n"
    "  ____   ___  _   _ _  ____\n"
    " / ___| / _ \\| \\ | (_)/ ___|\n"
    " \\___ \\| | | |  \\| | | |\n"
    "  ___) | |_| | |\\  | | |___\n"
    " |____/ \\___/|_| \\_|_|\\____|\n\n"
    "-- Software for Open Networking in the Cloud --\n\n"
    "Unauthorized access and/or use are prohibited.\n"
    "All access and/or use are subject to monitoring.\n\n"
    "Help:    https://sonic-net.github.io/SONiC/\n\n"
)


def serve(fabric: Fabric, name: str, device: Device) -> Served:
    """The lab's entry point (``PERSONALITIES["sonic"]``)."""
    state = SwitchState(fabric, name, device, sonic_if_index)
    dev = SonicDevice(state)
    mib = SwitchMib(state, sys_descr=lambda: sys_descr(dev), sys_object_id=SYS_OBJECT_ID)
    return Served(
        cli=lambda: SonicCli(dev),
        mib=mib,
        banner=BANNER,
        stop=state.stop,
    )
