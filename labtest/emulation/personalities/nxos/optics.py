"""NX-OS ``show interface transceiver details``: one block per port, the module's identity,
then a DOM table per media lane with its alarm and warning thresholds.

Layout of genieparser's QSFP-DD-400G-DR4 golden output (the driver's format source
``show_interface_transceiver_details__genie_qsfpdd_400g_dr4``): "Lane Number:N Network
Lane" blocks, each with Temperature, Voltage, Current, Tx Power and Rx Power rows of five
values (current, high alarm, low alarm, high warning, low warning); a flag after the
current value (``++`` high alarm, ``+`` high warning, ``--`` low alarm, ``-`` low warning)
as in ntc-templates' SFP capture. Values and thresholds are the fabric's, so a dirty
connector shows as a lower Rx Power (and its flag) on the far end's lanes.
"""

from __future__ import annotations

from labtest.emulation.model.optics import DomThresholds, LaneDom, Threshold, TransceiverInventory
from labtest.emulation.personalities.nxos.base import NxosCommands
from labtest.emulation.personalities.nxos.interfaces import module_type

_RULE = "    " + "-" * 76
_NOTE = "    Note: ++  high-alarm; +  high-warning; --  low-alarm; -  low-warning"


def flag(value: float, th: Threshold) -> str:
    """The mark NX-OS prints after a reading that crosses a threshold ("" inside)."""
    if value >= th.high_alarm:
        return "++"
    if value >= th.high_warning:
        return "+"
    if value <= th.low_alarm:
        return "--"
    if value <= th.low_warning:
        return "-"
    return ""


def dom_row(label: str, value: float, unit: str, th: Threshold) -> str:
    """``    Rx Power     -3.10 dBm --    3.99 dBm  -9.91 dBm ...`` (five values, one unit
    each, the flag after the current one)."""
    levels = (th.high_alarm, th.low_alarm, th.high_warning, th.low_warning)
    cells = "".join(f"{v:>8.2f} {unit:<4}" for v in levels)
    return f"    {label:<12}{value:>7.2f} {unit:<4}{flag(value, th):<3}{cells}".rstrip()


class OpticCommands(NxosCommands):
    """The transceiver details of every port, present or not."""

    def transceiver_details_text(self) -> str:
        fabric, name = self.dev.fabric, self.state.name
        out: list[str] = []
        for port in self.state.ports:
            inv = fabric.transceiver(name, port)
            out.append(port)
            if not inv.present:
                out += ["    transceiver is not present", ""]
                continue
            out += ["    transceiver is present", *_identity(inv), ""]
            dom, th = fabric.dom(name, port), fabric.dom_thresholds(name, port)
            for lane in dom.lanes:
                out += _lane_block(lane, dom.temperature_c, dom.voltage_v, th)
        return "\n".join(out) + "\n"


def _identity(inv: TransceiverInventory) -> list[str]:
    lines = [
        f"    type is {module_type(inv)}",
        f"    name is {inv.vendor}",
        f"    part number is {inv.part_number}",
        f"    revision is {inv.hardware_rev}",
        f"    serial number is {inv.serial}",
        f"    firmware version is {inv.firmware_version}",
    ]
    if inv.wavelengths_nm:
        lines.append(f"    Nominal transmitter wavelength is {inv.wavelengths_nm[0]:.2f} nm")
    lines += [
        f"    media lane count is {inv.lanes}",
        f"    vendor OUI is {inv.vendor_oui.replace('-', '').lower()}",
        f"    date code is {inv.date_code}",
        f"    max power is {inv.power_w:.2f} W",
        f"    media interface advertising code is {_advertised(inv.standard)}",
    ]
    return lines


#: the IEEE 802.3 clause NX-OS names after an advertised PMD ("400GBASE-DR4 (Cl 124)" in
#: genieparser's capture; 400GBASE-FR4 is specified in clause 151, IEEE 802.3cu)
CLAUSES = {"400GBASE-DR4": 124, "400GBASE-FR4": 151}


def _advertised(standard: str) -> str:
    clause = CLAUSES.get(standard)
    return f"{standard} (Cl {clause})" if clause else standard


def _lane_block(lane: LaneDom, temperature_c: float, voltage_v: float,
                th: DomThresholds) -> list[str]:
    return [
        f"Lane Number:{lane.lane} Network Lane",
        _RULE,
        "                Current              Alarms                  Warnings",
        "                Measurement     High        Low         High          Low",
        _RULE,
        dom_row("Temperature", temperature_c, "C", th.temperature_c),
        dom_row("Voltage", voltage_v, "V", th.voltage_v),
        dom_row("Current", lane.bias_ma, "mA", th.bias_ma),
        dom_row("Tx Power", lane.tx_power_dbm, "dBm", th.tx_power_dbm),
        dom_row("Rx Power", lane.rx_power_dbm, "dBm", th.rx_power_dbm),
        "    Transmit Fault Count = 0",
        _RULE,
        _NOTE,
        "",
    ]
