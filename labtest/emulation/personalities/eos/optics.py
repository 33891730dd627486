"""EOS transceiver documents: DOM per lane port, thresholds, the text tables, inventory."""

from __future__ import annotations

import math
import re
from typing import Any

from labtest.emulation.personalities import SwitchState
from labtest.emulation.personalities._text import fixed_columns
from labtest.emulation.personalities.eos.base import EosCommands, short_name
from labtest.emulation.personalities.switch_mib import dbm_to_mw


class OpticCommands(EosCommands):
    """Transceiver DOM and thresholds per lane port, and the transceiver inventory."""

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


def _fixed2(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.2f}"


def _lane_port(port: str, lane: int, state: SwitchState) -> str | None:
    """EOS names lane N of ``EthernetX/1`` ``EthernetX/N``; None when it cannot (another
    port has that name, or the port is not an ``X/1`` port)."""
    if lane == 1:
        return port
    m = re.fullmatch(r"(Ethernet\d+)/1", port)
    name = f"{m.group(1)}/{lane}" if m else None
    return None if name is None or state.has_port(name) else name


