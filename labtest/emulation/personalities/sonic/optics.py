"""SONiC's transceiver and PRBS commands: sfputil's EEPROM and DOM layout, transceiver PM,
and the per-lane PRBS of SONiC's PRBS HLD."""

from __future__ import annotations

from typing import Any

from labtest.emulation.personalities._text import hms, sci_superscript, table
from labtest.emulation.personalities.sonic.base import (
    MODULE_TYPES,
    CliError,
    PrbsRun,
    SonicCommands,
    ok,
    option,
    usage,
)
from labtest.emulation.sshserver import CliReply

CONNECTORS = {"MPO-12": "MPO 1x12", "MPO-16": "MPO 1x16", "LC": "LC"}


class OpticCommands(SonicCommands):
    """sfputil's transceiver commands and the PRBS commands."""

    # format: eeprom_dom__sfp_test_cmis_qsfpdd (sfputil CMIS layout, sorted keys,
    # threshold keys padded to the longest)
    def show_transceiver_eeprom(self, args: list[str]) -> CliReply:
        dom = "--dom" in args or "-d" in args
        blocks = [self._eeprom(port, dom) for port in self._ports(args)]
        return ok(["\n\n".join(blocks)])

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
        return ok(["\n\n".join(lines)])

    # --- PRBS (SONiC PRBS per-lane HLD) ---------------------------------------------------

    # format: prbs_status__mgmt25213_ethernet128 (per-lane table after a run) and
    # prbs_status__hld_running ("Note: No PRBS result data available" while running)
    def show_prbs_status(self, args: list[str]) -> CliReply:
        if "-i" not in args or args.index("-i") + 1 >= len(args):
            return self._prbs_summary()
        port = args[args.index("-i") + 1]
        if not self.state.has_port(port):
            raise CliError(f"Error: Interface {port} not found\n", 1)
        run = self.dev.prbs.get(port)
        if run is None:
            return ok([f"Error: No PRBS test data found for {port}"])
        now = self.dev.fabric.now_s()
        status = "Running" if run.stop_s is None else "Completed"
        duration = hms((run.stop_s if run.stop_s is not None else now) - run.start_s)
        header = (
            f"Interface: {port} | Mode: {run.mode} | Pattern: {run.pattern} | "
            f"Status: {status} | Duration: {duration}"
        )
        if run.mode == "tx":
            return ok(
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
            return ok([header, "", "Note: No PRBS result data available"])
        rows = []
        for lane in run.lanes:
            rx_status = _prbs_rx_status(lane)
            lock = "Locked" if rx_status in ("OK", "LOCK_WITH_ERRORS") else "Not Locked"
            rows.append([lane.lane - 1, lock, rx_status, lane.errors, sci_superscript(lane.ber)])
        headers = ["Lane", "Lock", "RX Status", "Errors", "BER"]
        aligns = ["right", "left", "left", "right", "left"]
        return ok([header, "", table(headers, rows, align=aligns)])

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
        return ok([table(headers, rows, align="left")])

    def config_prbs(self, args: list[str]) -> CliReply:
        if len(args) < 2 or args[1] not in ("enable", "disable"):
            raise CliError(
                usage(
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
                raise CliError(f"Error: PRBS is already enabled on {port}\n", 1)
            mode = option(args, "--mode", "rx")
            pattern = option(args, "--pattern", "none")
            if mode not in ("rx", "tx", "both"):
                raise CliError(f'Error: Invalid value for "--mode": invalid choice: {mode}\n', 2)
            model_pattern = "PRBS31Q" if pattern == "none" else pattern
            fabric.prbs_start(
                name,
                port,
                model_pattern,
                generator=mode in ("tx", "both"),
                checker=mode in ("rx", "both"),
            )
            self.dev.prbs[port] = PrbsRun(mode, pattern, fabric.now_s())
            return ok([])
        if run is None or run.stop_s is not None:
            raise CliError(f"Error: PRBS is not enabled on {port}\n", 1)
        if run.mode in ("rx", "both"):
            run.lanes = fabric.prbs_read(name, port)  # captured at disable, as SONiC does
        run.stop_s = fabric.now_s()
        fabric.prbs_stop(name, port)
        return ok([])


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

