"""SONiC switch driver: sonic-utilities ``show``/``config`` commands over SSH.

Every method is one or two real SONiC commands (``docs/drivers.md`` lists them
all) whose text the parsers in ``labtest.drivers.sonic.parsers`` read. Configuration
goes through ``sudo config ...``, as on any SONiC box, and takes effect in
CONFIG_DB at once (it is not saved to ``/etc/sonic/config_db.json``).

Config snapshot and restore use SONiC's own mechanism: ``config save -y FILE``
writes the whole running CONFIG_DB to a file on the switch, ``config reload -y
FILE`` flushes CONFIG_DB, loads the file and restarts the services, so what
comes back is exactly the saved config, not a merge (``config load`` would
merge and leave added keys behind). The startup config is never touched. The
snapshot token names the file (``/etc/sonic/labtest-<time>-<id>.json``); files
stay on the switch until someone removes them.

PRBS uses the per-lane PRBS CLI of the SONiC PRBS HLD (``config interface prbs
PORT enable|disable``, ``show interfaces prbs status -i PORT``). SONiC reads the
checker only when PRBS is disabled, so read results after :meth:`prbs_stop`;
a release without that CLI raises ``CommandNotSupported``.

``vars`` understood (testbed device): ``snapshot_dir`` (default ``/etc/sonic``),
``reload_timeout_s`` (300), ``reboot_command`` (``sudo reboot``), ``reboot_poll_s``
(5), ``reboot_command_timeout_s`` (30).
"""

from __future__ import annotations

import json
import re
from dataclasses import fields, replace

from labtest.capabilities.switch import (
    Facts,
    FecHistogram,
    FecStats,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
    PfcCounters,
    PfcWatchdogConfig,
    PfcWatchdogState,
    PrbsResult,
    QueueCounter,
    QueueCounters,
    TransceiverPm,
)
from labtest.capabilities.transceiver import Transceiver
from labtest.drivers.common.cli import (
    new_snapshot_token,
    port_name,
    snapshot_token,
)
from labtest.drivers.common.clock import DATE_EPOCH_COMMAND, parse_date_epoch
from labtest.drivers.frr.routing import FrrRouting
from labtest.drivers.sonic import parsers as p
from labtest.errors import CommandNotSupported, ParseError
from labtest.testbed.model import Device, Testbed

PRBS_MODE = "both"  # generator and checker on the same port; a loopback or a peer in "both"


class SonicSwitch(FrrRouting):
    """A SONiC switch reached over SSH (admin account with sudo). Its BGP and BFD run in
    FRR (the bgp container): ``bgp_sessions()``/``bfd_sessions()`` read them through
    ``sudo vtysh`` (drivers/frr/routing.py)."""

    VTYSH = "sudo vtysh"

    def __init__(self, name: str, device: Device, testbed: Testbed) -> None:
        super().__init__(name, device, testbed)
        self._prbs_lanes: dict[str, list[int] | None] = {}  # port -> lanes asked for

    # --- facts and interfaces ---------------------------------------------------

    def facts(self) -> Facts:
        """``show version``; ``show platform summary`` fills what older releases omit
        (the parser falls back to the HwSKU when there is no Model Number)."""
        facts = self.show("show version", p.parse_version)
        model_known = facts.model is not None and facts.model != facts.hwsku
        if facts.serial and model_known:
            return facts
        try:
            summary = self.show("show platform summary", p.parse_platform_summary)
        except CommandNotSupported:
            return facts
        return replace(
            facts,
            serial=facts.serial or summary.serial,
            model=facts.model if model_known else summary.model or facts.model,
            platform=facts.platform or summary.platform,
            hwsku=facts.hwsku or summary.hwsku,
            asic=facts.asic or summary.asic,
            hardware_rev=facts.hardware_rev or summary.hardware_rev,
        )

    def interfaces(self) -> dict[str, InterfaceStatus]:
        return self.show("show interfaces status", p.parse_interfaces_status)

    def counters(self) -> dict[str, InterfaceCounters]:
        """``show interfaces counters``, one command: its table has no oper-status change
        count (``link_status_changes`` stays ``None``; see :meth:`link_status_changes`)."""
        return self.show("show interfaces counters", p.parse_interface_counters)

    def link_status_changes(self) -> dict[str, int]:
        """LinkFlapCounts: ``show interfaces flap`` (2025 releases on; an older one raises
        ``CommandNotSupported``). Read only by the link watchers, not with every counter
        snapshot: each ``show`` costs about a second on a real switch."""
        return self.show("show interfaces flap", p.parse_interfaces_flap)

    # --- PFC, queues, PFC watchdog ------------------------------------------------

    def pfc_counters(self) -> dict[str, PfcCounters]:
        return self.show("show pfc counters", p.parse_pfc_counters)

    def queue_counters(self) -> dict[str, QueueCounters]:
        """``show queue counters``, plus ECN marks and WRED drops from ``show queue
        wredcounters`` where the release has it."""
        queues = self.show("show queue counters", p.parse_queue_counters)
        try:
            wred = self.show("show queue wredcounters", p.parse_queue_counters)
        except CommandNotSupported:
            return queues
        return _merge_queues(queues, wred)

    def pfc_watchdog(self) -> dict[str, PfcWatchdogState]:
        return self.show("show pfcwd stats", p.parse_pfcwd_stats)

    def pfc_watchdog_config(self) -> dict[str, PfcWatchdogConfig]:
        return self.show("show pfcwd config", p.parse_pfcwd_config)

    def set_pfc_priority(self, port: str, priority: int, enabled: bool) -> None:
        """Make ``priority`` lossless (PFC on) or lossy on ``port``."""
        if not 0 <= priority <= 7:
            raise ValueError(f"PFC priority {priority} outside 0..7")
        state = "on" if enabled else "off"
        self.run(f"sudo config interface pfc priority {port_name(port)} {priority} {state}")

    def pfc_watchdog_start(
        self,
        ports: list[str],
        detection_time_ms: int,
        restoration_time_ms: int | None = None,
        action: str | None = None,
    ) -> None:
        """``sudo pfcwd start [--action A] [--restoration-time R] PORTS DETECTION``."""
        if action not in (None, "drop", "forward", "alert"):
            raise ValueError(f"PFC watchdog action {action!r}")
        options = f" --action {action}" if action else ""
        if restoration_time_ms is not None:
            options += f" --restoration-time {int(restoration_time_ms)}"
        names = " ".join(port_name(x) for x in ports) or "all"
        self.run(f"sudo pfcwd start{options} {names} {int(detection_time_ms)}")

    def pfc_watchdog_stop(self, ports: list[str] | None = None) -> None:
        names = " ".join(port_name(x) for x in ports or [])
        self.run(f"sudo pfcwd stop {names}".rstrip())

    def device_time_s(self) -> float:
        """The switch's clock (Clock), from its Linux shell: ``date +%s.%N``."""
        return self.show(DATE_EPOCH_COMMAND, parse_date_epoch)

    # --- FEC and transceivers -------------------------------------------------------

    def fec_stats(self) -> dict[str, FecStats]:
        return self.show("show interfaces counters fec-stats", p.parse_fec_stats)

    def fec_histogram(self, port: str) -> FecHistogram:
        command = f"show interfaces counters fec-histogram {port_name(port)}"
        text = self.run(command)
        found = self.parse(p.parse_fec_histogram, command, text, port=port)
        if port not in found:
            raise ParseError(self.name, f"{command}: no histogram for {port}", raw=text)
        return found[port]

    def transceivers(self) -> dict[str, Transceiver]:
        return self.show("show interfaces transceiver eeprom --dom", p.parse_transceiver_eeprom)

    def transceiver_pm(self) -> dict[str, TransceiverPm]:
        """Coherent modules (400ZR and kin): min/avg/max PM with thresholds."""
        return self.show("show interfaces transceiver pm", p.parse_transceiver_pm)

    # --- LLDP and port admin ----------------------------------------------------------

    def lldp_neighbors(self) -> dict[str, LldpNeighbor]:
        return self.show("show lldp table", p.parse_lldp_table)

    def set_admin(self, port: str, up: bool) -> None:
        verb = "startup" if up else "shutdown"
        self.run(f"sudo config interface {verb} {port_name(port)}")

    # --- PRBS -------------------------------------------------------------------------

    def prbs_start(self, port: str, pattern: str, lanes: list[int] | None = None) -> None:
        """Generator and checker on every lane of ``port`` (SONiC enables PRBS per port;
        ``lanes`` only filters what :meth:`prbs_read` returns)."""
        if not re.fullmatch(r"[A-Za-z0-9]+", pattern):
            raise ValueError(f"not a PRBS pattern name: {pattern!r}")
        name = port_name(port)
        self.run(f"sudo config interface prbs {name} enable --mode {PRBS_MODE} --pattern {pattern}")
        self._prbs_lanes[port] = lanes

    def prbs_stop(self, port: str) -> None:
        self.run(f"sudo config interface prbs {port_name(port)} disable")

    def prbs_read(self, port: str) -> list[PrbsResult]:
        command = f"show interfaces prbs status -i {port_name(port)}"
        text = self.run(command)
        found = self.parse(p.parse_prbs_status, command, text)
        if port not in found:
            raise ParseError(self.name, f"{command}: results are for {list(found)}", raw=text)
        lanes = self._prbs_lanes.get(port)
        return [r for r in found[port] if lanes is None or r.lane in lanes]

    # --- config snapshot and restore ---------------------------------------------------

    def running_config(self) -> str:
        """The whole CONFIG_DB as JSON text (``show runningconfiguration all``)."""
        command = "show runningconfiguration all"
        text = self.run(command)
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(self.name, f"{command}: not JSON ({exc})", raw=text) from None
        return text

    def snapshot(self) -> str:
        token = new_snapshot_token()
        self.run(f"sudo config save -y {self._snapshot_file(token)}")
        return token

    def restore(self, token: str) -> None:
        """Reload the snapshot and wait until the interfaces answer again."""
        path = self._snapshot_file(snapshot_token(token))
        timeout_s = self.seconds("reload_timeout_s", 300.0)
        self.run(f"sudo config reload -y {path}", timeout_s=timeout_s)
        self.wait_until(self.interfaces, timeout_s, "config reload")

    def _snapshot_file(self, token: str) -> str:
        directory = str(self.device.vars.get("snapshot_dir", "/etc/sonic")).rstrip("/")
        return f"{directory}/{token}.json"

    # --- reboot ------------------------------------------------------------------------

    def reboot(self, timeout_s: float) -> None:
        command = str(self.device.vars.get("reboot_command", "sudo reboot"))
        self.reboot_and_wait(command, self._uptime_s, timeout_s)

    def _uptime_s(self) -> float | None:
        return self.show("show version", p.parse_version).uptime_s


def _merge_queues(
    base: dict[str, QueueCounters], extra: dict[str, QueueCounters]
) -> dict[str, QueueCounters]:
    """Fill the columns ``base`` lacks (ECN marks, WRED drops) from ``extra``, queue by queue."""
    out: dict[str, QueueCounters] = {}
    for port, counters in base.items():
        more = {q.queue: q for q in extra[port].queues} if port in extra else {}
        merged: list[QueueCounter] = []
        for q in counters.queues:
            other = more.get(q.queue)
            if other is not None:
                filled = {
                    f.name: getattr(other, f.name)
                    for f in fields(QueueCounter)
                    if getattr(q, f.name) is None and getattr(other, f.name) is not None
                }
                q = replace(q, **filled)
            merged.append(q)
        out[port] = QueueCounters(queues=merged)
    return out
