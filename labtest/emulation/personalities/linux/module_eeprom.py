"""``ethtool -m`` of an emulated CMIS module (QSFP-DD/OSFP), printed as ethtool prints it.

ethtool's CMIS decoder (cmis.c, ``\\t%-41s : %s``), labels and order as in the
QDD-400G-XDR4 capture (netdev, 2024-10-15); the active firmware line as in ethtool's
``cmis_show_fw_active_version`` (netdev patch).
"""

from __future__ import annotations

import math
from typing import Any

_IDENTIFIERS = {
    "QSFP-DD": "0x18 (QSFP-DD Double Density 8X Pluggable Transceiver (INF-8628))",
    "OSFP": "0x19 (OSFP 8X Pluggable Transceiver)",
}
_CONNECTORS = {
    "LC": "0x07 (LC)",
    "MPO-12": "0x0c (MPO Parallel Optic)",
    "MPO-16": "0x0c (MPO Parallel Optic)",
}
_LEVEL_WORDS = (
    ("high", "alarm", "high_alarm"),
    ("low", "alarm", "low_alarm"),
    ("high", "warning", "high_warning"),
    ("low", "warning", "low_warning"),
)


def _f(label: str, value: str) -> str:
    return f"\t{label:<41} : {value}\n"


def _mw(dbm: float, dark_dbm: float) -> str:
    if dbm <= dark_dbm or math.isinf(dbm):
        return "0.0000 mW / -inf dBm"
    return f"{10 ** (dbm / 10):.4f} mW / {dbm:.2f} dBm"


def _degrees(c: float) -> str:
    return f"{c:.2f} degrees C / {c * 9 / 5 + 32:.2f} degrees F"


def ethtool_module_text(
    inv: Any, dom: Any, thresholds: Any, flags: list[Any], dark_dbm: float
) -> str:
    """``ethtool -m`` of a CMIS module (QSFP-DD/OSFP), lanes as the module has them."""
    lanes = list(dom.lanes)
    on = {(f.quantity, f.level, f.lane) for f in flags}
    smf_km = 2.0 if "FR" in inv.standard else 0.5
    fw = ".".join(inv.firmware_version.split(".")[:2]) or "0.0"
    text = [
        _f("Identifier", _IDENTIFIERS.get(inv.form_factor, _IDENTIFIERS["QSFP-DD"])),
        _f("Power class", "8" if inv.power_w > 10 else "5"),
        _f("Max power", f"{inv.power_w:.2f}W"),
        _f("Connector", _CONNECTORS.get(inv.connector, "0x0c (MPO Parallel Optic)")),
        _f("Cable assembly length", "0.00m"),
        _f("Tx CDR bypass control", "No"),
        _f("Rx CDR bypass control", "No"),
        _f("Tx CDR", "Yes"),
        _f("Rx CDR", "Yes"),
        _f("Transmitter technology", "0x06 (1310 nm EML)"),
        _f("Laser wavelength", f"{inv.wavelengths_nm[0]:.3f}nm"),
        _f("Laser wavelength tolerance", "6.500nm"),
        _f("Length (SMF)", f"{smf_km:.2f}km"),
        _f("Length (OM5)", "0m"),
        _f("Length (OM4)", "0m"),
        _f("Length (OM3 50/125um)", "0m"),
        _f("Length (OM2 50/125um)", "0m"),
        _f("Vendor name", inv.vendor),
        _f("Vendor OUI", inv.vendor_oui.replace("-", ":")),
        _f("Vendor PN", inv.part_number),
        _f("Vendor rev", inv.hardware_rev),
        _f("Vendor SN", inv.serial),
        _f("Date code", inv.date_code.replace("-", "")[2:]),
        _f("Revision compliance", "Rev. 5.0"),
        _f("Active firmware version", fw),
    ]
    for label, key in (
        ("Rx loss of signal", "rx_los"),
        ("Tx loss of signal", "tx_los"),
        ("Rx loss of lock", "rx_lol"),
        ("Tx loss of lock", None),
        ("Tx fault", None),
    ):
        hit = [(key, "asserted", lane.lane) in on for lane in lanes] if key else []
        value = "[ " + ", ".join("Yes" if h else "No" for h in hit) + " ]" if any(hit) else "None"
        text.append(_f(label, value))
    text += [
        _f("Module State", "0x03 (ModuleReady)"),
        _f("LowPwrAllowRequestHW", "Off"),
        _f("LowPwrRequestSW", "Off"),
        _f("Module temperature", _degrees(dom.temperature_c)),
        _f("Module voltage", f"{dom.voltage_v:.4f} V"),
    ]
    text += [
        _f(f"Laser tx bias current (Channel {ln.lane})", f"{ln.bias_ma:.3f} mA") for ln in lanes
    ]
    text += [
        _f(f"Transmit avg optical power (Channel {ln.lane})", _mw(ln.tx_power_dbm, dark_dbm))
        for ln in lanes
    ]
    text += [
        _f(f"Rcvr signal avg optical power (Channel {ln.lane})", _mw(ln.rx_power_dbm, dark_dbm))
        for ln in lanes
    ]
    for name, quantity in (("temperature", "temperature_c"), ("voltage", "voltage_v")):
        for side, level, key in _LEVEL_WORDS:
            state = "On" if (quantity, key, None) in on else "Off"
            text.append(_f(f"Module {name} {side} {level}", state))
    for ln in lanes:
        for label, quantity, chan in (
            ("Laser bias current", "bias_ma", f"(Chan {ln.lane})"),
            ("Laser tx power", "tx_power_dbm", f"(Channel {ln.lane})"),
            ("Laser rx power", "rx_power_dbm", f"(Channel {ln.lane})"),
        ):
            for side, level, key in _LEVEL_WORDS:
                head = f"{label} {side} {level}"
                state = "On" if (quantity, key, ln.lane) in on else "Off"
                text.append(_f(f"{head:<{len(label) + 14}} {chan}", state))
    th = thresholds
    rows = (
        ("Laser bias current", th.bias_ma, lambda v: f"{v:.3f} mA"),
        ("Laser output power", th.tx_power_dbm, lambda v: _mw(v, -math.inf)),
        ("Module temperature", th.temperature_c, _degrees),
        ("Module voltage", th.voltage_v, lambda v: f"{v:.4f} V"),
        ("Laser rx power", th.rx_power_dbm, lambda v: _mw(v, -math.inf)),
    )
    for label, t, fmt in rows:
        for side, level, key in (
            ("high", "alarm", "high_alarm"),
            ("low", "alarm", "low_alarm"),
            ("high", "warning", "high_warning"),
            ("low", "warning", "low_warning"),
        ):
            text.append(_f(f"{label} {side} {level} threshold", fmt(getattr(t, key))))
    return "".join(text)
