"""NX-OS interface tables: status, traffic counters, error counters and PFC frames.

Layouts follow the samples under ``tests/drivers/samples/nxos`` (the driver's own format
sources): ``show interface status`` as ntc-templates' Nexus 9000 capture (fixed columns,
status cut to nine characters), the counter tables as genieparser's golden outputs
(narrow "Port  A  B" tables under dash rules, one per column group), ``show interface
priority-flow-control`` as the Nexus 5K capture (a port with lossless priorities reads
"On  (8)", their hex bitmap, as the sample output a public UCS fabric-interconnect parser
quotes).
"""

from __future__ import annotations

from collections.abc import Sequence

from labtest.emulation.model.optics import TransceiverInventory
from labtest.emulation.personalities import PortView
from labtest.emulation.personalities.nxos.base import NxosCommands, short_name

_RULE = "-" * 80
_WIDE_RULE = "-" * 82
_PFC_RULE = "=" * 60
DESCRIPTION_CHARS = 18  # NX-OS cuts the Name column to its width
STATUS_CHARS = 9  # "notconnect" prints as "notconnec"


def port_status(view: PortView) -> str:
    """The Status word: ``disabled`` (shut), ``xcvrAbsen`` (no module), ``connected``,
    else ``notconnec``."""
    if not view.admin_up:
        return "disabled"
    if not view.optic:
        return "xcvrAbsent"[:STATUS_CHARS]
    return "connected" if view.oper_up else "notconnect"[:STATUS_CHARS]


def speed_text(gbps: float) -> str:
    """``400G``; below 1G the bare Mb/s NX-OS prints (``100``)."""
    return f"{gbps:g}G" if gbps >= 1 else f"{round(gbps * 1000)}"


def counter_table(headers: Sequence[str], rows: Sequence[Sequence[object]], port_w: int,
                  col_w: int, rule: str) -> list[str]:
    """One "Port A B" table: the port left-aligned, each count right-aligned under the end
    of its header, framed by dash rules, a blank line after."""

    def line(cells: Sequence[object]) -> str:
        head, *rest = (str(c) for c in cells)
        return (head.ljust(port_w) + "".join(c.rjust(col_w) for c in rest)).rstrip()

    return [rule, line(["Port", *headers]), rule, *(line(r) for r in rows), ""]


class InterfaceCommands(NxosCommands):
    """``show interface status``, ``... counters [errors]``, ``... priority-flow-control``."""

    def status_text(self) -> str:
        rows = []
        for view in self.state.views():
            inv = self.dev.fabric.transceiver(self.state.name, view.name)
            name = self.state.descriptions.get(view.name) or "--"
            # duplex and speed are the negotiated ones: "auto" until the link is up
            duplex, speed = ("full", speed_text(view.speed_gbps)) if view.oper_up else (
                "auto", "auto")
            rows.append(
                f"{short_name(view.name):<14}{name[:DESCRIPTION_CHARS]:<19}"
                f"{port_status(view):<10}{'routed':<10}{duplex:<8}{speed:<8}"
                f"{module_type(inv) if inv.present else '--'}"
            )
        header = "Port          Name               Status    Vlan      Duplex  Speed   Type"
        return "\n".join([_RULE, header, _RULE, *rows, ""]) + "\n"

    def counters_text(self) -> str:
        views = self.state.views()
        out: list[str] = [""]
        for (a, b), fields in (
            (("InOctets", "InUcastPkts"), ("rx_octets", "rx_packets")),
            (("InMcastPkts", "InBcastPkts"), None),
            (("OutOctets", "OutUcastPkts"), ("tx_octets", "tx_packets")),
            (("OutMcastPkts", "OutBcastPkts"), None),
        ):
            # the model counts frames, not casts: every packet is unicast here
            rows = [
                [short_name(v.name), *((getattr(v, f) for f in fields) if fields else (0, 0))]
                for v in views
            ]
            out += counter_table([a, b], rows, 16, 33, _WIDE_RULE)
        return "\n".join(out) + "\n"

    def errors_text(self) -> str:
        """The six error tables of genieparser's 24-port capture; the model's counts land
        in FCS-Err, Rcv-Err, Xmit-Err and the two discard columns, the MAC-level
        columns it does not model read 0 (SQETest-Err ``--`` as on a full-duplex port)."""
        views = self.state.views()

        def rows(values: Sequence[str]) -> list[list[object]]:
            return [[short_name(v.name), *(_error_cell(v, c) for c in values)] for v in views]

        out: list[str] = [""]
        for headers, rule in (
            (("Align-Err", "FCS-Err", "Xmit-Err", "Rcv-Err", "UnderSize", "OutDiscards"), _RULE),
            (("Single-Col", "Multi-Col", "Late-Col", "Exces-Col", "Carri-Sen", "Runts"),
             _WIDE_RULE),
            (("Giants", "SQETest-Err", "Deferred-Tx", "IntMacTx-Er", "IntMacRx-Er",
              "Symbol-Err"), _WIDE_RULE),
            (("InDiscards",), _WIDE_RULE),
            (("Stomped-CRC",), _RULE),
        ):
            out += counter_table(headers, rows(headers), 14, 12, rule)
        return "\n".join(out) + "\n"

    def pfc_text(self) -> str:
        """Per-port PFC frame totals (NX-OS splits them by neither priority nor direction
        of the pause); Mode/Oper say whether the switch has lossless priorities."""
        bitmap = sum(1 << p for p in self.state.pfc_priorities())
        mode, oper = ("On", f"On  ({bitmap:x})") if bitmap else ("Auto", "Off")
        rows = [
            f"{v.name:<19}{mode:<5}{oper:<15}{sum(v.pfc_rx_frames):<11}"
            f"{sum(v.pfc_tx_frames)}"
            for v in self.state.views()
        ]
        header = "Port               Mode Oper(VL bmap)  RxPPP      TxPPP"
        return "\n".join([_PFC_RULE, header, _PFC_RULE, "", *rows]) + "\n"


def _error_cell(view: PortView, column: str) -> object:
    counts = {
        "FCS-Err": view.rx_fcs_errors,
        "Rcv-Err": view.rx_errors,
        "Xmit-Err": view.tx_errors,
        "OutDiscards": view.tx_discards,
        "InDiscards": view.rx_discards,
    }
    if column == "SQETest-Err":
        return "--"
    return counts.get(column, 0)


def module_type(inv: TransceiverInventory) -> str:
    """The module's form factor and catalogue name (``QSFP-DD-400G-DR4``), as the Type
    column and ``type is`` of the transceiver details read."""
    return f"{inv.form_factor}-{inv.optic}" if inv.form_factor else inv.optic
