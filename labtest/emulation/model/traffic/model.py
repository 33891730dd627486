"""The traffic half of the fabric model: what ``Fabric`` holds as ``fabric.traffic``.

``TrafficModel`` is the traffic core (``model_core.TrafficCore``: flows, routing,
the fluid engine, time) plus what emulators and faults ask of it: perftest and
nccl-tests runs, port, RoCE and watchdog counters, forwarding views, and the
switch and NIC settings faults change (each change returns its undo).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import ParamSpec

import numpy as np

from labtest.emulation.model.faults import FaultError
from labtest.emulation.model.traffic import collectives, fluid_run, roce, wireloss
from labtest.emulation.model.traffic.flows import (
    FiveTuple,
    Flow,
    PauseSource,
)
from labtest.emulation.model.traffic.forwarding import HASH_FIELDS, HashConfig
from labtest.emulation.model.traffic.model_core import TrafficCore, locked
from labtest.emulation.model.traffic.records import (
    EndpointTraffic,
    PfcwdQueueStats,
    QueueTraffic,
    RoceCounters,
)
from labtest.emulation.model.traffic.topology import (
    PRIORITIES,
    ROCE_DPORT,
    UDP,
)

Undo = Callable[[], None]
_P = ParamSpec("_P")


def set_again(setter: Callable[_P, Undo], *args: _P.args, **kwargs: _P.kwargs) -> Undo:
    """A setter's undo: the setter again with the values it replaced (its own undo dropped)."""

    def undo() -> None:
        setter(*args, **kwargs)

    return undo


class BrokenRing(FaultError):
    """A collective's ring has a hop with no usable path (a fault in the fabric): what the
    hosts see as NCCL's completion error, not an emulator bug."""


class TrafficModel(TrafficCore):
    """Forwarding, congestion, RoCE, collectives and TG flows over one testbed."""

    # --- forwarding views ----------------------------------------------------

    @locked
    def path(
        self,
        src: str,
        dst: str,
        sport: int = 49152,
        dst_qp: int = 0,
        returning: Iterable[str] = (),
    ) -> list[str]:
        """Egress ports (``dev:port``) a RoCE packet with this entropy takes, NIC first;
        with ``returning`` links, the path once those are routed again."""
        s, d = self._host_port(src), self._host_port(dst)
        t = FiveTuple(self.topo.ip(s), self.topo.ip(d), UDP, sport, ROCE_DPORT, dst_qp)
        back = np.zeros(len(self.topo.links), dtype=bool)
        for link in returning:
            back[self.topo.resolve_link(link)] = True
        hops = self.routing.path_when_routed(s, d, t, back)
        return [self.topo.ports[p].endpoint for p in hops or []]

    @locked
    def flow_path(self, flow_id: int) -> list[str]:
        f = self._flow(flow_id)
        if f.meta.get("noroute") or not f.path:
            return []
        return [self.topo.ports[p].endpoint for p in f.path]

    @locked
    def port_loads_gbps(self) -> dict[str, float]:
        """Offered wire load per egress port from the flows sending now."""
        eng = self.engine
        load = np.zeros(len(self.topo.ports))
        rate = eng.rc * eng.f_on * 8 / 1e9
        for i, f in enumerate(eng.flows):
            if f.meta.get("noroute"):
                continue
            for p in f.path or []:
                load[p] += rate[i]
                if eng.down[p]:
                    break
        return {p.endpoint: float(load[p.index]) for p in self.topo.ports}

    @locked
    def link_routed(self, link: str) -> bool:
        return bool(self.convergence.routed[self.topo.resolve_link(link)])

    # --- perftest and nccl-tests ---------------------------------------------

    @locked
    def run_bandwidth(
        self,
        pairs: Iterable[tuple[str, str]],
        msg_size_b: int = 65536,
        qps: int = 1,
        duration_s: float = 5.0,
        bidirectional: bool = False,
        start: bool = True,
        qp_numbers: Mapping[tuple[str, str, int, int], tuple[int, int]] | None = None,
    ) -> list[roce.BandwidthResult]:
        """ib_write_bw between each (client, server): max-min shares of the fabric as it is now.

        With ``start`` the queue pairs are also started for ``duration_s`` so the
        switch and NIC counters move as the clock advances. ``qp_numbers`` (by client,
        server, direction 0/1, queue pair) pins each queue pair's QP numbers, so one run's
        measurement and its started flows take the same ECMP routes (drawn apart, the rate
        came from one route and the counters' bytes from another).
        """
        pairs = list(pairs)
        qp_flows: list[tuple[int, Flow]] = []
        for k, (client, server) in enumerate(pairs):
            c, s = self._host_port(client), self._host_port(server)
            dirs = [(c, s), (s, c)] if bidirectional else [(c, s)]
            for d, (a, b) in enumerate(dirs):
                for q in range(qps):
                    name = f"perftest:{client}->{server}#{q}"
                    stop = self.now_s + duration_s
                    pin = (qp_numbers or {}).get((client, server, d, q))
                    qp_flows.append((k, self._roce_qp(a, b, msg_size_b, 3, self.now_s, stop,
                                                      name, pin)))
        others = [f for f in self._live.values() if f.kind == "roce" and f.active(self.now_s)]
        flows = [f for _, f in qp_flows] + others
        gbn = np.array([  # go-back-N over a lossy path (wireloss.go_back_n_goodput)
            wireloss.go_back_n_goodput(wireloss.path_loss(self.topo, self.engine.wire, f))
            for _, f in qp_flows
        ])
        goodput = self._max_min_with_fixed(flows, self._tg_load_bps())[: len(qp_flows)] * gbn
        for (_, f), k, g in zip(qp_flows, gbn, goodput, strict=True):
            if k < 1.0:  # the QP's model flow carries what go-back-N leaves
                f.meta["cap_bps"] = min(float(f.meta["cap_bps"]), max(float(g), 1.0))
        results = []
        for k, (client, server) in enumerate(pairs):
            mine = [(f, g) for (kk, f), g in zip(qp_flows, goodput, strict=True) if kk == k]
            bw = float(sum(g for _, g in mine)) / 1e9
            broken = [f for f, _ in mine if self._path_broken(f)]
            mtu = int(mine[0][0].meta["roce_mtu_b"])
            rate = bw * 1e9 / (msg_size_b * 8)
            results.append(
                roce.BandwidthResult(
                    client=client,
                    server=server,
                    msg_size_b=msg_size_b,
                    qps=qps,
                    duration_s=duration_s,
                    bidirectional=bidirectional,
                    bw_avg_gbps=bw,
                    bw_peak_gbps=bw,
                    msg_rate_mpps=rate / 1e6,
                    iterations=int(rate * duration_s),
                    mtu_b=mtu,
                    error="transport retry counter exceeded" if broken else None,
                )
            )
        if start:
            for _, f in qp_flows:
                self._add_flow(f)
            self._reroute()
        return results

    @locked
    def run_latency(
        self, client: str, server: str, size_b: int = 2, iterations: int = 1000
    ) -> roce.LatencyResult:
        """ib_write_lat: one-way latency samples over the current path: the fixed part (NIC,
        switches, serialisation, propagation) with its jitter, plus the queueing delay each
        sample meets in the egress queues on the way, drawn from the queues' settled trace
        (``fluid_run.queueing_delay_samples``): idle, nothing; under load, what the queues
        hold and how they move."""
        c, s = self._host_port(client), self._host_port(server)
        f = self._roce_qp(c, s, size_b, 3, self.now_s, self.now_s, "perftest-lat")
        if self._path_broken(f, self.engine.sustained_pause()):
            nan = float("nan")
            return roce.LatencyResult(
                client,
                server,
                size_b,
                0,
                nan,
                nan,
                nan,
                nan,
                nan,
                nan,
                nan,
                error="transport retry counter exceeded",
            )
        assert f.path is not None
        samples = roce.latency_samples(f.base_latency_s, iterations, self.rng)
        samples += fluid_run.queueing_delay_samples(self.engine, f.path, iterations, self.rng)
        return roce.latency_result(client, server, size_b, samples)

    @locked
    def run_allreduce(
        self, hosts: list[str], sizes_b: list[int] | None = None
    ) -> list[collectives.NcclRow]:
        """all_reduce_perf over a ring of ``hosts`` (one rank per host, in the given order)."""
        if len(hosts) < 2:
            raise FaultError("a ring needs at least two hosts")
        ring = []
        for a, b in itertools.pairwise([*hosts, hosts[0]]):
            pa, pb = self._host_port(a), self._host_port(b)
            ring.append(self._roce_qp(pa, pb, 1 << 22, 3, self.now_s, self.now_s, f"nccl:{a}->{b}"))
        others = [f for f in self._live.values() if f.kind == "roce" and f.active(self.now_s)]
        goodput = self._max_min(ring + others, fabric=True)[: len(ring)]
        slowest = float(goodput.min()) / 8
        if slowest <= 0:
            raise BrokenRing("the ring is broken: a hop has no usable path")
        alpha = max(f.base_latency_s for f in ring) + collectives.STEP_OVERHEAD_S
        sizes = sizes_b or collectives.size_sweep()
        return collectives.allreduce_rows(sizes, len(hosts), slowest, alpha)

    # --- counters ----------------------------------------------------------

    @locked
    def port_counters(self, endpoint: str) -> EndpointTraffic:
        p = self.topo.port(endpoint)
        c = self.engine.ctr
        peer = self.topo.ports[p].peer
        q = slice(p * PRIORITIES, (p + 1) * PRIORITIES)
        queues = tuple(
            QueueTraffic(
                priority=k,
                tx_packets=round(c["q_tx_pkts"][q][k]),
                tx_bytes=round(c["q_tx_octets"][q][k]),
                drop_packets=round(c["q_drops"][q][k]),
                ecn_marked_packets=round(c["q_ecn_marked"][q][k]),
            )
            for k in range(PRIORITIES)
        )
        up, _, _ = self._link_sig[self.topo.ports[p].link]
        sent = max(float(c["tx_pkts"][peer]), 1e-9)  # what the peer sent: the wire lost some
        return EndpointTraffic(
            endpoint=endpoint,
            oper_up=bool(up),
            speed_gbps=float(self.engine.speed_gbps[p]),
            mtu=int(self.mtu[p]),
            tx_packets=round(c["tx_pkts"][p]),
            tx_bytes=round(c["tx_octets"][p]),
            rx_packets=round(c["tx_pkts"][peer] - c["wire_lost"][peer]),
            rx_bytes=round(c["tx_octets"][peer] * (1.0 - c["wire_lost"][peer] / sent)),
            tx_drops=round(c["tx_drops"][p]),
            rx_discards=round(c["rx_discards"][p]),
            pfc_tx_frames=tuple(round(x) for x in c["pfc_tx"][q]),
            pfc_rx_frames=tuple(round(x) for x in c["pfc_rx"][q]),
            queues=queues,
            rx_fcs_errors=round(c["wire_fcs"][peer]),
        )

    @locked
    def roce_counters(self, host: str) -> RoceCounters:
        p = self._host_port(host)
        c = self.engine.ctr
        q = slice(p * PRIORITIES, (p + 1) * PRIORITIES)
        peer = self.topo.ports[p].peer
        return RoceCounters(
            endpoint=self.topo.ports[p].endpoint,
            np_ecn_marked_roce_packets=round(c["np_ecn_marked"][p]),
            np_cnp_sent=round(c["np_cnp_sent"][p]),
            rp_cnp_handled=round(c["rp_cnp_handled"][p]),
            rx_prio_pause=tuple(round(x) for x in c["pfc_rx"][q]),
            tx_prio_pause=tuple(round(x) for x in c["pfc_tx"][q]),
            rx_discards_phy=round(c["rx_discards"][p]),
            tx_packets=round(c["tx_pkts"][p]),
            rx_packets=round(c["tx_pkts"][peer]),
        )

    @locked
    def pfcwd_stats(self, device: str) -> list[PfcwdQueueStats]:
        """The watchdog's view of every monitored lossless queue of ``device``."""
        self.topo.require_device(device)
        eng, c = self.engine, self.engine.ctr
        out = []
        for p in self.topo.device_ports.get(device, []):
            for prio in sorted(self.qos[device].pfc):
                q = p * PRIORITIES + prio
                out.append(
                    PfcwdQueueStats(
                        endpoint=self.topo.ports[p].endpoint,
                        priority=prio,
                        status="stormed" if eng.wd_storm[q] else "operational",
                        storm_detected=int(eng.wd_detected[q]),
                        storm_restored=int(eng.wd_restored[q]),
                        tx_ok=round(c["wd_tx_ok"][q]),
                        tx_drop=round(c["wd_tx_drop"][q]),
                        rx_ok=round(c["wd_rx_ok"][q]),
                        rx_drop=round(c["wd_rx_drop"][q]),
                    )
                )
        return out

    # --- configuration the faults change (each returns its undo) ---------------

    def _changed(self) -> None:
        self.engine.flush()
        self._apply()

    @locked
    def set_pfc(self, device: str, priority: int, enabled: bool) -> Undo:
        self.topo.require_device(device)
        q = self.qos[device]
        was = priority in q.pfc
        (q.pfc.add if enabled else q.pfc.discard)(priority)
        self._changed()

        return set_again(self.set_pfc, device, priority, was)

    @locked
    def set_ecn(self, device: str, enabled: bool) -> Undo:
        """Switch: ECN marking on its lossless queues. Host: RoCE congestion control (NP+RP)."""
        self.topo.require_device(device)
        was = self.qos[device].ecn
        self.qos[device].ecn = enabled
        self._refresh_cc()
        self._changed()

        return set_again(self.set_ecn, device, was)

    @locked
    def set_ecn_thresholds(self, device: str, kmin_b: float | None, kmax_b: float | None) -> Undo:
        """Switch: the ECN marking thresholds of its lossless queues (None, None: the
        defaults by port speed). The PFC XOFF thresholds stay where the buffer profile
        put them, so thresholds above XOFF leave the work to PFC."""
        self.topo.require_device(device)
        if not self.topo.is_switch(device):
            raise FaultError(f"{device!r} is not a switch")
        if (kmin_b is None) != (kmax_b is None) or (
            kmin_b is not None and kmax_b is not None and not 0 <= kmin_b <= kmax_b
        ):
            raise FaultError(f"ECN thresholds need 0 <= Kmin <= Kmax, got {kmin_b}, {kmax_b}")
        q = self.qos[device]
        was = (q.ecn_kmin_b, q.ecn_kmax_b)
        q.ecn_kmin_b, q.ecn_kmax_b = kmin_b, kmax_b
        self._changed()

        return set_again(self.set_ecn_thresholds, device, *was)

    @locked
    def set_pg_xoff(self, device: str, xoff_b: float | None) -> Undo:
        """Switch: where its lossless ingress PGs send XOFF (None: the default, at ECN Kmax).
        A shallow buffer profile pauses below Kmin: PFC acts before ECN marks."""
        self.topo.require_device(device)
        if not self.topo.is_switch(device):
            raise FaultError(f"{device!r} is not a switch")
        if xoff_b is not None and xoff_b <= 0:
            raise FaultError(f"PG XOFF must be > 0 bytes, got {xoff_b}")
        q = self.qos[device]
        was = q.pg_xoff_b
        q.pg_xoff_b = xoff_b
        self._changed()

        return set_again(self.set_pg_xoff, device, was)

    def _refresh_cc(self) -> None:
        topo = self.topo
        for f in self.flows.values():
            if f.kind != "roce":
                continue
            src, dst = topo.ports[f.src].device, topo.ports[f.dst].device
            f.dcqcn = f.ect = self.qos[src].ecn and topo.settings[src].dcqcn
            f.ecn_bits = 2 if f.ect else 0
            f.np_enabled = self.qos[dst].ecn

    @locked
    def set_pfcwd(self, device: str, enabled: bool) -> Undo:
        self.topo.require_device(device)
        was = self.qos[device].pfcwd
        self.qos[device].pfcwd = enabled
        self._changed()

        return set_again(self.set_pfcwd, device, was)

    @locked
    def start_pfc_storm(self, endpoint: str, priority: int = 3) -> Undo:
        """A NIC sends pause frames on ``priority`` without end (a stuck receive pipeline)."""
        p = self._host_port(endpoint)
        speed = max(float(self.engine.speed_gbps[p]), 1.0)
        key = next(self._source_ids)
        refresh = 65535 * 512 / (speed * 1e9) / 2
        self.pause_sources[key] = PauseSource(
            port=self.topo.ports[p].peer,
            priorities=(priority,),
            fraction=1.0,
            frames_per_s=1.0 / refresh,
            start_s=self.now_s,
        )
        self._fire()

        def undo() -> None:
            with self._lock:
                self.pause_sources[key].stop_s = self.now_s
                self._fire()

        return undo

    @locked
    def set_ecmp_hash(self, devices: list[str] | None, seed: int, fields: tuple[str, ...]) -> Undo:
        """Hash seed and fields of ``devices`` (all switches when None)."""
        bad = set(fields) - HASH_FIELDS
        if bad:
            raise FaultError(f"unknown hash fields {sorted(bad)}; known: {sorted(HASH_FIELDS)}")
        targets = devices or self.topo.switches()
        for d in targets:
            if d not in self.routing.hash:
                raise FaultError(f"{d!r} is not a switch")
        old = {d: self.routing.hash[d] for d in targets}
        for d in targets:
            self.routing.hash[d] = HashConfig(seed, tuple(fields))
        self._changed()

        def undo() -> None:
            with self._lock:
                self.routing.hash.update(old)
                self._changed()

        return undo

    @locked
    def add_convergence_delay(self, device: str, extra_ms: float) -> Undo:
        self.topo.require_device(device)
        ext = self.convergence.extra_ms
        ext[device] = ext.get(device, 0.0) + extra_ms

        def undo() -> None:
            with self._lock:
                ext[device] = ext.get(device, 0.0) - extra_ms

        return undo

    @locked
    def set_nic(
        self, host: str, speed_gbps: float | None = None, pcie_gbps: float | None = None
    ) -> Undo:
        """Cap a host NIC's negotiated speed and/or its PCIe bandwidth."""
        self.topo.require_device(host)
        if not self.topo.is_host(host):
            raise FaultError(f"{host!r} is not a host")
        old = (self.nic_speed_gbps.get(host), self.pcie_gbps.get(host))
        for table, value in ((self.nic_speed_gbps, speed_gbps), (self.pcie_gbps, pcie_gbps)):
            if value is not None:
                table[host] = value
        self._changed()

        def undo() -> None:
            with self._lock:
                for table, value in zip((self.nic_speed_gbps, self.pcie_gbps), old, strict=True):
                    if value is None:
                        table.pop(host, None)
                    else:
                        table[host] = value
                self._changed()

        return undo

    @locked
    def set_mtu(self, endpoint: str, mtu: int) -> Undo:
        p = self.topo.port(endpoint)
        was = int(self.mtu[p])
        self.mtu[p] = mtu
        self._changed()

        return set_again(self.set_mtu, endpoint, was)

    @locked
    def set_straggler(self, link: str, rate_fraction: float) -> Undo:
        li = self.topo.resolve_link(link)
        was = self.straggler.get(li)
        self.straggler[li] = rate_fraction
        self._changed()

        def undo() -> None:
            with self._lock:
                if was is None:
                    self.straggler.pop(li, None)
                else:
                    self.straggler[li] = was
                self._changed()

        return undo

    # --- gray failures: frames lost on the wire (wireloss.py) -----------------------

    def _directions(self, link: str, direction: str) -> tuple[int, tuple[int, ...]]:
        li = self.topo.resolve_link(link)
        dirs = {"ab": (0,), "ba": (1,), "both": (0, 1)}.get(direction)
        if dirs is None:
            raise FaultError(f"direction must be ab, ba or both, got {direction!r}")
        return li, dirs

    @locked
    def add_wire_loss(self, link: str, direction: str, loss: float, corrupt: bool) -> Undo:
        """``link`` (either way, or one direction: ``ab`` = a end to b end) loses ``loss`` of
        its frames on the wire: corrupted (the receiver counts FCS errors) or silently."""
        li, dirs = self._directions(link, direction)
        return self._wire_fault(self.engine.wire.add_loss(li, dirs, loss, corrupt))

    @locked
    def add_wire_hole(self, link: str, direction: str, fraction: float, salt: int) -> Undo:
        """``link`` as an ECMP member drops every frame of the flows whose hash falls in
        ``fraction`` of the hash space, silently."""
        li, dirs = self._directions(link, direction)
        return self._wire_fault(self.engine.wire.add_hole(li, dirs, fraction, salt))

    def _wire_fault(self, take_out: Callable[[], None]) -> Undo:
        """A wire fault just put in the table: the model re-plans now, and the undo takes it
        out and re-plans again (under the model's lock)."""
        self._changed()

        def undo() -> None:
            with self._lock:
                take_out()
                self._changed()

        return undo

    @locked
    def lost_whole(self, flow_id: int) -> bool:
        """The wire loses every frame of the flow (its 5-tuple in an ECMP member's hole, a
        one-way drop of everything): a tool that handshakes on the flow's own 5-tuple
        (iperf3's UDP stream setup) never hears back."""
        f = self.flows.get(flow_id)
        return f is not None and wireloss.path_loss(self.topo, self.engine.wire, f) >= 1.0

    @locked
    def roce_retransmissions(self, endpoint: str) -> dict[str, int]:
        """The NIC's RoCE transport counters that frames lost on the wire move (mlx5 names):
        as responder, ``out_of_sequence`` (the first packet after each loss arrives out of
        sequence) for RoCE flows towards it; as requester, ``packet_seq_err`` (one NAK
        sequence error per loss) and ``local_ack_timeout_err`` (a lost last packet of a
        message draws no NAK: the ACK timer expires; one loss in packets-per-message) for
        its own flows. Frames lost per flow: frames sent x the path's wire loss
        (``wireloss.path_loss``), the loss in force now over the flow's life."""
        p = self._host_port(endpoint)
        out = {"out_of_sequence": 0.0, "packet_seq_err": 0.0, "local_ack_timeout_err": 0.0}
        wire = self.engine.wire
        if wire.empty():
            return {k: 0 for k in out}
        self.engine.flush()
        for f in self.flows.values():
            if f.kind != "roce" or p not in (f.src, f.dst):
                continue
            lost = f.tx_frames * wireloss.path_loss(self.topo, wire, f)
            if f.dst == p:
                out["out_of_sequence"] += lost
            if f.src == p:
                out["packet_seq_err"] += lost
                per_msg = max(float(f.meta.get("msg_size_b", 0)) / max(f.payload_bytes, 1), 1.0)
                out["local_ack_timeout_err"] += lost / per_msg
        return {k: round(v) for k, v in out.items()}

