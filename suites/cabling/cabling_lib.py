"""The cabling plan against what LLDP hears: pure comparison, plus the reads behind it.

Every end of a planned link on a device that speaks LLDP is checked from that
side: it must hear the planned far end (system name and port ID, IEEE 802.1AB).
An end that hears nobody is *missing*; one that hears a port the plan cables
elsewhere is *swapped* (the message names both planned links); one that hears
a port the plan does not know is *unexpected*. Neighbours on ports outside the
plan are listed per device. Names compare case-insensitively, without a DNS
domain, with ``Et``/``Eth`` port abbreviations expanded. Where a port's table
holds several neighbours, the driver's newest one is judged (IEEE 802.1AB keeps
an old neighbour until its hold time runs out); the table is read again until it
settles, and an end still changing cannot be proven right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from labtest import labtime
from labtest.capabilities.switch import Interfaces, InterfaceStatus, Lldp, LldpNeighbor
from labtest.errors import InfraError
from labtest.lab import Lab
from labtest.sweep import each_device
from labtest.testbed.model import Link

OK, MISSING, SWAPPED, UNEXPECTED = "ok", "missing", "swapped", "unexpected"
_ABBREVIATED = re.compile(r"^(?:et|eth)(?=\d)", re.IGNORECASE)


def normalise(end: str) -> str:
    """``Leaf1.lab.example:Et1/1`` -> ``leaf1:ethernet1/1`` (for comparison only)."""
    device, _, port = end.partition(":")
    return f"{device.split('.', 1)[0].lower()}:{_ABBREVIATED.sub('ethernet', port).lower()}"


@dataclass(frozen=True)
class EndCheck:
    link: str
    end: str  # the end LLDP was read at, "device:port"
    expected: str  # the planned far end
    seen: str | None  # the neighbour LLDP reports; None: nobody
    status: str
    detail: str


def check_plan(
    links: Iterable[Link], heard: dict[str, str | None], lldp_devices: set[str]
) -> dict[str, list[EndCheck]]:
    """Per link, the check of each end on an LLDP device (see the module docstring)."""
    links = list(links)
    planned: dict[str, tuple[str, str]] = {}  # normalised end -> (link name, raw end)
    for lk in links:
        for e in lk.ends:
            planned[normalise(str(e))] = (lk.name, str(e))
    out: dict[str, list[EndCheck]] = {}
    for lk in links:
        checks = []
        for here, there in (lk.ends, lk.ends[::-1]):
            if here.device not in lldp_devices:
                continue
            end, expected = str(here), str(there)
            seen = heard.get(end)
            checks.append(_judge(lk.name, end, expected, seen, planned))
        out[lk.name] = checks
    return out


def _judge(
    link: str, end: str, expected: str, seen: str | None, planned: dict[str, tuple[str, str]]
) -> EndCheck:
    if seen is None:
        detail = f"{end} hears no LLDP neighbour; the plan cables it to {expected}"
        return EndCheck(link, end, expected, None, MISSING, detail)
    if normalise(seen) == normalise(expected):
        return EndCheck(link, end, expected, seen, OK, f"{end} hears {expected} as planned")
    other = planned.get(normalise(seen))
    if other is not None:
        detail = (
            f"{end} hears {seen}, which the plan cables in {other[0]}; expected {expected} ({link})"
        )
        return EndCheck(link, end, expected, seen, SWAPPED, detail)
    detail = f"{end} hears {seen}, which is not in the cabling plan; expected {expected}"
    return EndCheck(link, end, expected, seen, UNEXPECTED, detail)


def unplanned_neighbours(
    links: Iterable[Link], heard: dict[str, str | None], device: str
) -> dict[str, str]:
    """``{end: neighbour}`` heard on ports of ``device`` that no planned link uses."""
    ends = {normalise(str(e)) for lk in links for e in lk.ends}
    return {
        end: seen
        for end, seen in heard.items()
        if seen is not None and end.split(":", 1)[0] == device and normalise(end) not in ends
    }


# --- speed and FEC ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    what: str  # "speed" | "fec"
    detail: str


def speed_fec_mismatches(link: Link, status: dict[str, InterfaceStatus]) -> list[Mismatch]:
    """Speed and FEC at the ends that report them, against each other and the plan."""
    ends = [(str(e), status.get(str(e))) for e in link.ends]
    found = []
    speeds = {end: s.speed_gbps for end, s in ends if s is not None and s.speed_gbps}
    if link.speed_gbps:
        for end, speed in speeds.items():
            if speed != link.speed_gbps:
                found.append(
                    Mismatch("speed", f"{end} runs {speed:g}G; the plan says {link.speed_gbps:g}G")
                )
    if len(set(speeds.values())) > 1:
        found.append(Mismatch("speed", " vs ".join(f"{e} {v:g}G" for e, v in speeds.items())))
    fecs = {end: s.fec.lower() for end, s in ends if s is not None and s.fec}
    if len(fecs) == 2 and len(set(fecs.values())) > 1:
        found.append(Mismatch("fec", " vs ".join(f"{e} FEC {v}" for e, v in fecs.items())))
    return found


# --- reading the lab ---------------------------------------------------------------------------


@dataclass
class Observed:
    heard: dict[str, str | None] = field(default_factory=dict)  # "device:port" -> neighbour
    #: ends whose table still lists other (older) neighbours after the re-reads: the
    #: neighbour changed during the check ("device:port" -> ("system:port", ...))
    changing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    status: dict[str, InterfaceStatus] = field(default_factory=dict)  # "device:port"
    errors: dict[str, InfraError] = field(default_factory=dict)  # device -> error

    def raise_for(self, *devices: str) -> None:
        for name in devices:
            if name in self.errors:
                raise self.errors[name].with_traceback(None)  # fresh: no frames pile up


def _lldp(lab: Lab, device: str) -> dict[str, LldpNeighbor]:
    return {f"{device}:{port}": n for port, n in lab.device(device).lldp_neighbors().items()}


def _who(n: LldpNeighbor) -> str | None:
    return f"{n.remote_system}:{n.remote_port}" if n.remote_system and n.remote_port else None


def _status(lab: Lab, device: str) -> dict[str, InterfaceStatus]:
    return {f"{device}:{p}": s for p, s in lab.device(device).interfaces().items()}


def observe(
    lab: Lab,
    links: list[Link],
    retry_s: float,
    poll_s: float,
    changed_retry_s: float = 0.0,
    changed_poll_s: float = 1.0,
) -> Observed:
    """LLDP and interface status of every device on the plan. Ends that hear nobody are
    read again (bounded by ``retry_s``): a link down for a moment is the link suite's.
    Ends whose table still lists an older neighbour beside the newest (a re-cabled port
    until the old entry's hold time runs out) are read again for up to
    ``changed_retry_s``; those still changing stay in ``Observed.changing``."""
    devices = list(dict.fromkeys(e.device for lk in links for e in lk.ends))
    lldp = [d for d in devices if d in set(lab.names(capability=Lldp))]
    switches = [d for d in devices if d in set(lab.names(capability=Interfaces))]
    obs = Observed()
    tables: dict[str, LldpNeighbor] = {}
    for result in each_device(lab, lldp, lambda d: _lldp(lab, d), obs.errors).values():
        tables.update(result)
    planned = [str(e) for lk in links for e in lk.ends if e.device in lldp]
    start = labtime.monotonic()
    while True:
        now = labtime.monotonic() - start
        quiet = {e for e in planned if tables.get(e) is None or _who(tables[e]) is None}
        changing = {e for e in planned if e in tables and tables[e].older_neighbours}
        due = (quiet if now < retry_s else set()) | (changing if now < changed_retry_s else set())
        again = sorted({e.split(":", 1)[0] for e in due} - set(obs.errors))
        if not again:
            break
        labtime.sleep(poll_s if quiet & due else changed_poll_s)
        for result in each_device(lab, again, lambda d: _lldp(lab, d), obs.errors).values():
            for end, n in result.items():
                if _who(n) is not None or tables.get(end) is None:
                    tables[end] = n  # a neighbour heard once is not forgotten by a blip
    obs.heard = {end: _who(n) for end, n in tables.items()}
    obs.changing = {end: n.older_neighbours for end, n in tables.items() if n.older_neighbours}
    for status in each_device(lab, switches, lambda d: _status(lab, d), obs.errors).values():
        obs.status.update(status)
    return obs
