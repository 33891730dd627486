"""Ring AllReduce timing, shaped like nccl-tests' ``all_reduce_perf`` table.

A ring AllReduce of S bytes over n ranks takes 2(n-1) steps, each moving S/n
bytes over every ring hop at once, so the step pace is that of the *slowest*
hop and t = 2(n-1) * (alpha + S / (n * B_min)). nccl-tests reports
algbw = S / t and busbw = algbw * 2(n-1)/n (nccl-tests doc/PERFORMANCE.md, via
reference section 6), which for large S tends to B_min: one half-rate link
halves the job's bus bandwidth.

alpha, the per-step cost, is the slowest hop's one-way latency plus 1 us of
collective-library overhead per step: our assumption, chosen so small sizes
land in the tens of microseconds as in public multi-node nccl-tests logs.
"""

from __future__ import annotations

from dataclasses import dataclass

STEP_OVERHEAD_S = 1e-6
FLOAT_B = 4


@dataclass(frozen=True)
class NcclRow:
    """One line of an all_reduce_perf table (out-of-place and in-place)."""

    size_b: int
    count: int
    dtype: str
    redop: str
    root: int
    time_us: float
    algbw_gbytes_s: float
    busbw_gbytes_s: float
    wrong: int
    in_place_time_us: float
    in_place_algbw_gbytes_s: float
    in_place_busbw_gbytes_s: float

    @property
    def busbw_gbps(self) -> float:
        return self.busbw_gbytes_s * 8


def bus_factor(n: int) -> float:
    return 2 * (n - 1) / n


def allreduce_time_s(size_b: int, n: int, slowest_bytes_s: float, step_latency_s: float) -> float:
    if n < 2:
        return step_latency_s
    steps = 2 * (n - 1)
    return steps * (step_latency_s + size_b / n / slowest_bytes_s)


def allreduce_rows(
    sizes_b: list[int], n: int, slowest_bytes_s: float, step_latency_s: float
) -> list[NcclRow]:
    rows = []
    for size in sizes_b:
        t = allreduce_time_s(size, n, slowest_bytes_s, step_latency_s)
        alg = size / t / 1e9
        bus = alg * bus_factor(n) if n > 1 else 0.0
        rows.append(
            NcclRow(
                size_b=size,
                count=size // FLOAT_B,
                dtype="float",
                redop="sum",
                root=-1,
                time_us=t * 1e6,
                algbw_gbytes_s=alg,
                busbw_gbytes_s=bus,
                wrong=0,
                in_place_time_us=t * 1e6,
                in_place_algbw_gbytes_s=alg,
                in_place_busbw_gbytes_s=bus,
            )
        )
    return rows


def size_sweep(begin_b: int = 8, end_b: int = 8 << 30, factor: int = 2) -> list[int]:
    """The ``-b 8 -e 8G -f 2`` size list."""
    sizes, s = [], begin_b
    while s <= end_b:
        sizes.append(s)
        s *= factor
    return sizes
