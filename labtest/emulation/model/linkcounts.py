"""What every port counts while its link is up: FEC codewords, PRBS bits, link drops.

Counts are drawn per model step from the lanes' BER (``physics``), for the whole
step at once; reads subtract the base kept at the last clear.
"""

from __future__ import annotations

import numpy as np

from labtest.emulation.model import physics
from labtest.emulation.model.modules import MAX_LANES, ModuleArrays
from labtest.emulation.model.physics import FecStats, PrbsLane


class LinkCounters:
    """Per-module counters, indexed [module] or [module, lane]."""

    def __init__(self, n: int, t0_s: float = 0.0) -> None:
        self.up_s = np.zeros(n)  # seconds the link was up, per module
        # per module: the time its up_s and FEC counts are integrated to (a read of one
        # port may bring that port alone up to date; the next step starts each from here)
        self.t_s = np.full(n, float(t0_s))
        self.cw_done = np.zeros(n, dtype=np.int64)
        self.fec_bins = np.zeros((n, physics.FEC_BINS), dtype=np.int64)
        self.fec_unc = np.zeros(n, dtype=np.int64)
        self.fec_base_bins = np.zeros_like(self.fec_bins)
        self.fec_base_unc = np.zeros_like(self.fec_unc)
        self.down_count = np.zeros(n, dtype=np.int64)  # link-down events seen
        self.prbs_locked_s = np.zeros((n, MAX_LANES))
        self.prbs_errors = np.zeros((n, MAX_LANES), dtype=np.int64)
        self.prbs_lol = np.zeros((n, MAX_LANES), dtype=np.int64)
        self.prbs_lock = np.zeros((n, MAX_LANES), dtype=bool)  # checker locked at last refresh

    def count_fec(
        self,
        a: ModuleArrays,
        ber: np.ndarray,
        up_s: np.ndarray,
        rng: np.random.Generator,
        probabilities: tuple[np.ndarray, np.ndarray] | None = None,
        modules: np.ndarray | None = None,
    ) -> None:
        """Whole codewords counted while the link is up, drawn per port.

        ``probabilities``: ``fec_probabilities(a, ber)`` kept from an earlier step
        with the same optics (row by row the same numbers, computed once).
        ``modules``: count only these (``up_s`` is then theirs); default every one.
        Draws for consecutive intervals add up to a draw for their union (Poisson
        and multinomial counts are additive), so counting a port on its own
        between steps changes no distribution.
        """
        sel = np.arange(self.up_s.size) if modules is None else modules
        self.up_s[sel] += up_s
        rate = physics.codewords_per_s(a.line_rate_gbps[sel])
        cw_total = np.floor(rate * self.up_s[sel]).astype(np.int64)
        n_cw_sel = cw_total - self.cw_done[sel]
        self.cw_done[sel] = cw_total
        n_cw = np.zeros(self.up_s.size, dtype=np.int64)
        n_cw[sel] = n_cw_sel
        live = sel[n_cw_sel > 0]
        if live.size and probabilities is not None:
            pmf, p_unc = probabilities
            bins, unc = physics.sample_codewords(rng, n_cw[live], p_unc, (pmf[live], p_unc[live]))
            self.fec_bins[live] += bins
            self.fec_unc[live] += unc
        elif live.size:
            ser = physics.symbol_error_ratio(ber[live])
            ser_port = (ser * a.mask[live]).sum(axis=1) / a.lanes[live]
            bins, unc = physics.sample_codewords(rng, n_cw[live], ser_port)
            self.fec_bins[live] += bins
            self.fec_unc[live] += unc

    @staticmethod
    def fec_probabilities(a: ModuleArrays, ber: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per module: P(k symbol errors) per codeword and P(uncorrectable), from lane BERs."""
        ser = physics.symbol_error_ratio(ber)
        ser_port = (ser * a.mask).sum(axis=1) / a.lanes
        return physics.codeword_probabilities(ser_port)

    def count_prbs(
        self,
        a: ModuleArrays,
        ber: np.ndarray,
        lock: np.ndarray,
        lit_s: np.ndarray,
        drops: np.ndarray,
        rng: np.random.Generator,
    ) -> None:
        """Checkers count bits and errors from the same per-lane BER as FEC.

        ``lock``: (M, L) lanes locked through the step; ``lit_s``: (M,) seconds the
        link was lit; ``drops``: (M,) link drops in the step (each a loss of lock).
        """
        if not lock.any():
            return
        locked_s = lock * lit_s[:, None]
        self.prbs_locked_s += locked_s
        bits = locked_s * a.lane_rate_bps[:, None]
        self.prbs_errors += physics.sample_bit_errors(rng, bits, ber)
        self.prbs_lol += lock * drops[:, None]

    def relock(self, lock_now: np.ndarray, checker_on: np.ndarray) -> None:
        """A checker that was locked and is not now has lost lock once."""
        if self.prbs_lock.any():
            self.prbs_lol += self.prbs_lock & ~lock_now & checker_on[:, None]
        self.prbs_lock = lock_now

    def reset_prbs(self, m: int) -> None:
        self.prbs_locked_s[m] = 0.0
        self.prbs_errors[m] = 0
        self.prbs_lol[m] = 0

    def clear_fec(self, m: int) -> None:
        self.fec_base_bins[m] = self.fec_bins[m]
        self.fec_base_unc[m] = self.fec_unc[m]

    def fec_stats(
        self, device: str, port: str, m: int, a: ModuleArrays, errors_1s: list[int] | None
    ) -> FecStats:
        """The FEC readout; ``errors_1s``: bit errors per lane in the last second, or None
        when the link is down (a device shows no BER then)."""
        bins = (self.fec_bins[m] - self.fec_base_bins[m]).tolist()
        unc = int(self.fec_unc[m] - self.fec_base_unc[m])
        n = int(a.lanes[m])
        lane_bits = float(a.line_rate_gbps[m]) * 1e9 / n  # one second per lane
        if errors_1s is not None:
            lanes_ber = tuple(e / lane_bits for e in errors_1s)
            pre = sum(errors_1s) / (lane_bits * n)
        else:
            lanes_ber, pre = (0.0,) * n, 0.0
        return FecStats(
            device=device,
            port=port,
            mode="rs544",
            total_codewords=sum(bins) + unc,
            corrected_codewords=sum(bins[1:]),
            uncorrectable_codewords=unc,
            symbol_errors=sum(k * b for k, b in enumerate(bins)),
            bins=tuple(bins),
            pre_fec_ber=pre,
            lanes_pre_fec_ber=lanes_ber,
        )

    def prbs_lanes(self, m: int, a: ModuleArrays, locked: np.ndarray) -> list[PrbsLane]:
        """The PRBS checker's readout per lane; ``locked``: (L,) lock now."""
        out = []
        for i in range(int(a.lanes[m])):
            locked_s = float(self.prbs_locked_s[m, i])
            bits = int(locked_s * float(a.lane_rate_bps[m]))
            errors = int(self.prbs_errors[m, i])
            out.append(
                PrbsLane(
                    lane=i + 1,
                    pattern=a.chk_pattern[m] or "",
                    enabled=a.chk_pattern[m] is not None,
                    locked=bool(locked[i]),
                    bits=bits,
                    errors=errors,
                    ber=errors / bits if bits else 0.0,
                    loss_of_lock_count=int(self.prbs_lol[m, i]),
                    locked_s=locked_s,
                )
            )
        return out
