"""Arista EOS switch driver: ``show ... | json`` over SSH, configuration in a CLI session.

EOS renders every show command it can as JSON, whose keys are stable across
releases, so reads use ``| json`` (``labtest.drivers.eos.parsers`` reads it). The
account needs privilege 15, so that each SSH session starts in enable mode.

Config snapshot and restore use EOS's own mechanism: ``copy running-config
flash:TOKEN.cfg`` saves the running config to flash, ``configure replace
flash:TOKEN.cfg`` makes the running config exactly that file again (a replace,
not a merge). The startup config is never touched; snapshot files stay on
flash until someone removes them.

Read as well, from the JSON shapes ANTA's tests use: FEC codeword counters and
pre-FEC BER per port (``show interfaces phy detail``), egress drops per traffic class
(``show interfaces counters queue detail``) with ECN marks merged in (``show qos
interfaces ecn counters queue``). PFC frames per priority (``show interfaces
priority-flow-control counters detail``; a release without it falls back to the port
totals of ``show priority-flow-control counters``) and the PFC pause watchdog (its
counters, ``show priority-flow-control counters watchdog``, and its configuration, the
``priority-flow-control`` lines of ``show running-config``) follow the keys public health
checks read (sources: ``drivers/eos/parsers/pfc.py``, docs/drivers.md). So the driver
offers ``PfcQueues``. BGP (``show ip bgp summary vrf all``) and BFD sessions (``show bfd
peers detail``), placed on ports by ``show ip interface``, follow napalm's and ANTA's EOS
fixtures (``drivers/eos/parsers/routing.py``): ``BgpSessions`` and ``BfdSessions``.

Not offered (no real published output to build a parser against, see
docs/drivers.md): the FEC codeword histogram and PRBS. So the driver offers
``FecCounters`` (``fec_stats``) but not ``FecCodewordHistogram`` (hence not ``Fec``,
which is both), nor ``Prbs``; a suite needing them reports the EOS end as not proven.

``vars`` understood: ``reboot_command`` (``reload now``), ``reboot_poll_s`` (5),
``reboot_command_timeout_s`` (30).
"""

from __future__ import annotations

from dataclasses import replace

from labtest.capabilities.routing import BfdSession, BgpSession
from labtest.capabilities.switch import (
    Facts,
    FecStats,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
    PfcCounters,
    PfcWatchdogConfig,
    PfcWatchdogState,
    QueueCounters,
)
from labtest.capabilities.transceiver import Transceiver
from labtest.drivers.common.cli import (
    CliSwitch,
    FlapsFromCounters,
    new_snapshot_token,
    port_name,
    snapshot_token,
)
from labtest.drivers.common.subnets import port_of
from labtest.drivers.eos import parsers as p
from labtest.errors import CommandNotSupported


class EosSwitch(FlapsFromCounters, CliSwitch):
    """An Arista EOS switch reached over SSH."""

    config_mode = ("configure", "end")

    def facts(self) -> Facts:
        return self.show("show version | json", p.parse_version)

    def interfaces(self) -> dict[str, InterfaceStatus]:
        """``show interfaces status`` with each port's MTU from ``show interfaces``."""
        status = self.show("show interfaces status | json", p.parse_interfaces_status)
        mtus = self.show("show interfaces | json", p.parse_interface_mtus)
        return {name: replace(st, mtu_bytes=mtus.get(name)) for name, st in status.items()}

    def counters(self) -> dict[str, InterfaceCounters]:
        """``show interfaces | json``: packets, octets and the error detail in one answer."""
        return self.show("show interfaces | json", p.parse_interface_counters)

    def transceivers(self) -> dict[str, Transceiver]:
        """DOM with thresholds; EOS lists each lane of a multi-lane optic as its own port.
        Vendor and part number come from the transceiver slots of ``show inventory``
        (the DOM answer has neither); a release without it leaves them ``None``."""
        dom = self.show("show interfaces transceiver detail | json", p.parse_transceivers)
        try:
            slots = self.show("show inventory | json", p.parse_inventory)
        except CommandNotSupported:
            return dom
        out: dict[str, Transceiver] = {}
        for port, module in dom.items():
            slot = slots.get(p.slot_of(port, slots) or "")
            if slot is not None and slot.present and module.present:
                module = replace(
                    module,
                    vendor=module.vendor or slot.vendor,
                    part_number=module.part_number or slot.part_number,
                    serial=module.serial or slot.serial,
                )
            out[port] = module
        return out

    def lldp_neighbors(self) -> dict[str, LldpNeighbor]:
        return self.show("show lldp neighbors detail | json", p.parse_lldp_neighbors)

    # --- FEC, PFC and queues --------------------------------------------------------

    def device_time_s(self) -> float:
        """The switch's clock (Clock): ``utcTime`` of ``show clock``."""
        return self.show("show clock | json", p.parse_clock)

    def fec_stats(self) -> dict[str, FecStats]:
        """Corrected/uncorrected codewords and pre-FEC BER of the line-side PHY."""
        return self.show("show interfaces phy detail | json", p.parse_phy_detail)

    def pfc_counters(self) -> dict[str, PfcCounters]:
        """Rx/Tx PFC frames per priority and port; a release without the per-priority
        command gives the port totals (``rx``/``tx`` lists of ``None``)."""
        try:
            return self.show(
                "show interfaces priority-flow-control counters detail | json",
                p.parse_pfc_counters_detail,
            )
        except CommandNotSupported:
            return self.show("show priority-flow-control counters | json", p.parse_pfc_counters)

    def queue_counters(self) -> dict[str, QueueCounters]:
        """Drops per traffic class, with the ECN-marked packets of each unicast queue."""
        drops = self.show("show interfaces counters queue detail | json", p.parse_queue_drops)
        marks = self.show("show qos interfaces ecn counters queue | json", p.parse_ecn_counters)
        return {
            port: QueueCounters(
                queues=[
                    replace(q, ecn_marked_packets=marks.get(port, {}).get(q.index))
                    if q.kind == "unicast"
                    else q
                    for q in counters.queues
                ]
            )
            for port, counters in drops.items()
        }

    def pfc_watchdog_config(self) -> dict[str, PfcWatchdogConfig]:
        """The watchdog timers of each PFC port with a lossless priority, from the
        running-config (EOS has one watchdog setting for every such port)."""
        return self.show("show running-config", p.parse_pfc_watchdog_config)

    def pfc_watchdog(self) -> dict[str, PfcWatchdogState]:
        """``PORT:QUEUE`` for every watched queue: each lossless queue of each port the
        running-config arms (PFC on, a no-drop priority, a watchdog timeout), with the
        stuck/recovery counts of ``show priority-flow-control counters watchdog``. EOS
        leaves a queue out of the counters until its first event: such a queue is
        "operational" with its counts ``None`` (not read, not 0)."""
        text = self.run("show running-config")
        wd, ports = self.parse(p.parse_pfc_config, "show running-config", text)
        counted = self.show(
            "show priority-flow-control counters watchdog | json", p.parse_pfc_watchdog_counters
        )
        out: dict[str, PfcWatchdogState] = {}
        if "timeout" in wd:
            for port, prios in ports.items():
                for queue in prios:
                    key = f"{port}:{queue}"
                    out[key] = counted.get(key) or PfcWatchdogState(
                        port=port,
                        queue=queue,
                        status="operational",
                        storms_detected=None,
                        storms_restored=None,
                    )
        for key, state in counted.items():
            out.setdefault(key, state)  # a queue the counters know beyond the config
        return out

    # --- BGP and BFD --------------------------------------------------------------------

    def _addresses(self) -> dict[str, list[str]]:
        return self.show("show ip interface | json", p.parse_ip_interfaces)

    def bgp_sessions(self) -> dict[str, BgpSession]:
        """IPv4 unicast peers of every VRF (``show ip bgp summary vrf all``), each on the
        port whose subnet holds it (``show ip interface``); an Established session's uptime
        is the switch clock (``show clock``) less its ``upDownTime``."""
        command = "show ip bgp summary vrf all | json"
        text = self.run(command)
        sessions = self.parse(p.parse_bgp_summary, command, text)
        if not sessions:
            return sessions
        changed = self.parse(p.bgp_state_changed_at, command, text)
        addresses = self._addresses()
        now = self.device_time_s() if any(s.established for s in sessions.values()) else None
        out: dict[str, BgpSession] = {}
        for key, s in sessions.items():
            at = changed.get(key)
            out[key] = replace(
                s,
                local_port=s.local_port or port_of(s.peer_address, addresses),
                uptime_s=max(now - at, 0.0) if now is not None and at and s.established else None,
            )
        return out

    def bfd_sessions(self) -> dict[str, BfdSession]:
        """Every BFD session (``show bfd peers detail``) with EOS's own detection time; a
        session with no interface named (``""``) sits on the port whose subnet holds it."""
        sessions = self.show("show bfd peers detail | json", p.parse_bfd_peers)
        if all(s.local_port for s in sessions.values()):
            return sessions
        addresses = self._addresses()
        return {
            key: s if s.local_port else replace(s, local_port=port_of(s.peer_address, addresses))
            for key, s in sessions.items()
        }

    def set_admin(self, port: str, up: bool) -> None:
        self.configure([f"interface {port_name(port)}", "no shutdown" if up else "shutdown"])

    # --- config snapshot and restore ----------------------------------------------------

    def running_config(self) -> str:
        """``show running-config`` (EOS prints no clock in it: two reads compare equal)."""
        return self.run("show running-config")

    def snapshot(self) -> str:
        token = new_snapshot_token()
        self.run(f"copy running-config flash:{token}.cfg")
        return token

    def restore(self, token: str) -> None:
        self.run(f"configure replace flash:{snapshot_token(token)}.cfg")

    # --- reboot -----------------------------------------------------------------------

    def reboot(self, timeout_s: float) -> None:
        command = str(self.device.vars.get("reboot_command", "reload now"))
        self.reboot_and_wait(command, lambda: self.facts().uptime_s, timeout_s)
