"""SONiC's interface commands: status, portstat counters and rates, FEC, PFC, queues, the
PFC watchdog and ``sonic-clear`` (sonic-utilities' portstat, pfcstat, queuestat, pfcwd)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from labtest.emulation.model.traffic.records import QueueTraffic
from labtest.emulation.personalities import PRIORITIES, PortView
from labtest.emulation.personalities._clock import epoch_s
from labtest.emulation.personalities._text import commas, table
from labtest.emulation.personalities.sonic.base import (
    MODULE_TYPES,
    RATE_MIN_DT_S,
    SonicCommands,
    counter_values,
    ok,
    port_alias,
    port_lanes,
    state_letter,
)
from labtest.emulation.sshserver import CliReply


class InterfaceCommands(SonicCommands):
    """portstat, pfcstat, queuestat, pfcwd and sonic-clear."""

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
                    port_lanes(port, st.speed_gbps),
                    f"{int(st.speed_gbps)}G",
                    st.mtu_bytes,
                    "rs",
                    port_alias(self.state, port),
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
        return ok([table(headers, rows)])

    # format: sonic-utilities tests/intf_flap (``show interfaces flap``, PR 3724): orchagent
    # counts every oper-status change; a port that never changed prints Never
    def show_interfaces_flap(self, args: list[str]) -> CliReply:
        rows = []
        stamp = "%a %b %d %H:%M:%S %Y"
        epoch0 = epoch_s(self.dev.fabric) - self.dev.fabric.now_s()
        for view in (self.state.port_view(p) for p in self._ports(args)):
            changes = view.status_changes
            last = {False: "Never", True: "Never"}
            link = self.dev.fabric.link_of(self.state.name, view.name)
            if changes and link is not None:
                for t, up in self.dev.fabric.link_transitions(link, 0.0, self.dev.fabric.now_s()):
                    last[up] = f"{datetime.fromtimestamp(epoch0 + t, UTC):{stamp}}"
            rows.append([view.name, changes or "Never", "Up" if view.admin_up else "Down",
                         "Up" if view.oper_up else "Down", last[False], last[True]])
        headers = ["Interface", "Flap Count", "Admin", "Oper", "Link Down TimeStamp(UTC)",
                   "Link Up TimeStamp(UTC)"]
        return ok([table(headers, rows)])

    def _counted(self, view: PortView) -> dict[str, int]:
        """Interface counters minus the ``sonic-clear counters`` baseline."""
        now = counter_values(view)
        base = self.dev.cleared.get(view.name, {})
        return {k: max(v - base.get(k, 0), 0) for k, v in now.items()}

    # format: show_interfaces_counters__cmdref (portstat), -a/--printall:
    # show_interfaces_counters_a__portstat_test_printall, errors:
    # show_interfaces_counters_errors__cmdref_s6000
    def show_interfaces_counters(self, args: list[str]) -> CliReply:
        printall = "-a" in args or "--printall" in args
        rows = []
        for view in (self.state.port_view(p) for p in self._ports(args)):
            c = self._counted(view)
            d = self.dev.since_last(view, RATE_MIN_DT_S)
            rx_bps, tx_bps = d.per_s(d.rx_octets), d.per_s(d.tx_octets)
            rx_pps, tx_pps = d.per_s(d.rx_packets), d.per_s(d.tx_packets)
            speed_bps = view.speed_gbps * 1e9
            row: list[object] = [view.name, state_letter(view), commas(c["rx_ok"]), _brate(rx_bps)]
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
        return ok([*self._cache_banner(), table(headers, rows)])

    def _cache_banner(self) -> list[str]:
        return [f"Last cached time was {self.dev.cleared_at}"] if self.dev.cleared_at else []

    def show_interfaces_counters_errors(self, args: list[str]) -> CliReply:
        rows = []
        for view in (self.state.port_view(p) for p in self._ports(args)):
            c = self._counted(view)
            rows.append(
                [
                    view.name,
                    state_letter(view),
                    commas(c["rx_err"]),
                    commas(c["rx_drp"]),
                    commas(0),
                    commas(c["tx_err"]),
                    commas(c["tx_drp"]),
                    commas(0),
                ]
            )
        headers = ["IFACE", "STATE", "RX_ERR", "RX_DRP", "RX_OVR", "TX_ERR", "TX_DRP", "TX_OVR"]
        return ok([*self._cache_banner(), table(headers, rows)])

    # format: fec_stats__pr4124_ber_flr (202505: BER and FLR columns)
    def show_fec_stats(self, args: list[str]) -> CliReply:
        rows = []
        for view in (self.state.port_view(p) for p in self._ports(args)):
            if not view.optic:
                rows.append([view.name, state_letter(view), *["N/A"] * 7])
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
                    state_letter(view),
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
        return ok([*self._cache_banner(), table(headers, rows)])

    # format: fec_histogram__swss3919_eth48 (one port) and
    # fec_histogram__portstat_fh_table (every port, "portstat -fh")
    def show_fec_histogram(self, args: list[str]) -> CliReply:
        names = [a for a in args if not a.startswith("-")]
        if names:
            port = self._ports(names)[0]
            bins = self._bins(port)
            rows = [[f"BIN{i}", "N/A" if b is None else b] for i, b in enumerate(bins)]
            return ok(
                [table(["Symbol Errors Per Codeword", "Codewords"], rows, align=["left", "right"])]
            )
        rows = []
        for port in self.state.ports:
            rows.append([port, *(commas(b) for b in self._bins(port))])
        headers = ["IFACE", *(f"BIN{i}" for i in range(16))]
        return ok([table(headers, rows)])

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
        return ok([table(["Port Rx", *pfc], rx_rows), "", table(["Port Tx", *pfc], tx_rows)])

    # format: show_queue_counters__cmdref (one block per port, UC then MC queues)
    def show_queue_counters(self, args: list[str]) -> CliReply:
        headers = ["Port", "TxQ", "Counter/pkts", "Counter/bytes", "Drop/pkts", "Drop/bytes"]
        return self._queue_blocks(
            args, headers, lambda q: (q.tx_packets, q.tx_bytes), lambda q: q.drop_packets, True
        )

    # format: show_queue_wredcounters__sonic_mgmt_s6100_ecn (WRED drops and ECN marks);
    # the model marks instead of dropping early: WRED drops stay 0
    def show_queue_wredcounters(self, args: list[str]) -> CliReply:
        headers = [
            "Port",
            "TxQ",
            "WredDrp/pkts",
            "WredDrp/bytes",
            "EcnMarked/pkts",
            "EcnMarked/bytes",
        ]
        return self._queue_blocks(args, headers, lambda q: (0, 0), lambda q: q.ecn_marked_packets)

    def _queue_blocks(
        self,
        args: list[str],
        headers: list[str],
        first: Callable[[QueueTraffic], tuple[int, int]],
        packets: Callable[[QueueTraffic], int],
        multicast: bool = False,
    ) -> CliReply:
        """queuestat's table per port: a (packets, bytes) pair, then a packet count with
        its bytes at the queue's mean packet size; zero multicast queues when asked."""
        blocks = []
        for view in (self.state.port_view(p) for p in self._ports(args)):
            rows = []
            for q in _queues(view):
                avg = q.tx_bytes / q.tx_packets if q.tx_packets else 0.0
                count = packets(q)
                rows.append(
                    [
                        view.name,
                        f"UC{q.priority}",
                        *(commas(v) for v in first(q)),
                        commas(count),
                        commas(round(count * avg)),
                    ]
                )
            if multicast:
                rows += [
                    [view.name, f"MC{PRIORITIES + i}", "0", "0", "0", "0"]
                    for i in range(PRIORITIES)
                ]
            blocks.append(table(headers, rows))
        return ok(["\n\n".join(blocks)])

    # format: pfcwd_stats__pfcwd_test_vectors (combined A/B columns); a stopped
    # watchdog shows N/A as status (pfcwd_stats__pr682_stopped)
    def show_pfcwd_stats(self, args: list[str]) -> CliReply:
        stats = self.dev.fabric.traffic.pfcwd_stats(self.state.name)
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
        return ok([table(headers, rows)])

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
        return ok([f"Changed polling interval to {wd.poll_ms}ms", table(headers, rows)])

    def sonic_clear_counters(self, args: list[str]) -> CliReply:
        cleared: dict[str, dict[str, int]] = {}
        for view in self.state.views():
            values = counter_values(view)
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
        return ok(["Cleared counters"])

    def sonic_clear_pfc(self, args: list[str]) -> CliReply:
        self.dev.pfc_cleared = {
            v.name: (v.pfc_rx_frames, v.pfc_tx_frames) for v in self.state.views()
        }
        return ok(["Cleared PFC counters"])


def _brate(bytes_per_s: float) -> str:
    """portstat's byte-rate format."""
    if bytes_per_s > 10e6:
        return f"{bytes_per_s / 1e6:.2f} MB/s"
    if bytes_per_s > 10e3:
        return f"{bytes_per_s / 1e3:.2f} KB/s"
    return f"{bytes_per_s:.2f} B/s"


def _util(bytes_per_s: float, speed_bps: float) -> str:
    return f"{bytes_per_s * 8 / speed_bps * 100:.2f}%" if speed_bps else "N/A"


def _queues(view: PortView) -> list[QueueTraffic]:
    """The port's unicast queues (all zero on a port the traffic model does not carry)."""
    return list(view.queues) or [QueueTraffic(i, 0, 0, 0, 0) for i in range(PRIORITIES)]

