"""Routing suite: the BGP and BFD sessions of every fabric link, up and staying up over an
observation window (ROUTING-1), and how fast a silent failure of the link is detected
(ROUTING-2).

A link that is up but drops every packet (a silent drop) passes link state and may pass
LLDP; its routing sessions do not. One test result per fabric link; the test plan is
README.md in this folder, pass criteria are in the limits profile (``routing.*``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import allure
import pytest

from labtest import labtime, plugin
from labtest.capabilities.routing import BfdSession, BfdSessions, BgpSession, BgpSessions
from labtest.errors import InfraError
from labtest.fixtures.cabling_plan import fabric_links
from labtest.fixtures.suite_data import load_settings
from labtest.sweep import each_device

if TYPE_CHECKING:  # names pytest must not collect
    from labtest.lab import Lab
    from labtest.testbed.model import Endpoint, Link, Testbed

SETTINGS = load_settings("routing")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fabric_link" in metafunc.fixturenames:
        tb = plugin.testbed_of(metafunc.config)
        links = fabric_links(tb) if tb is not None else []
        metafunc.parametrize("fabric_link", links, ids=[lk.name for lk in links])


@dataclass
class Sessions:
    """Every capable switch's sessions, keyed by local end point ``device:port``."""

    bgp: dict[str, BgpSession] = field(default_factory=dict)
    bfd: dict[str, BfdSession] = field(default_factory=dict)
    errors: dict[str, InfraError] = field(default_factory=dict)  # device -> error
    #: the read one observation window before this one (None: not watched) and the
    #: window's length: lab seconds from the end of that read to the start of this one
    before: Sessions | None = None
    window_s: float = 0.0

    def split(self, ends: list[Endpoint]) -> tuple[list[Endpoint], list[Endpoint]]:
        """(the ends whose switch answered, those whose switch could not be asked): a test
        judges the first, then raises for the second (``raise_for``), so the answering end's
        finding stands whatever the other's state (the plugin keeps a failure)."""
        unasked = [e for e in ends if e.device in self.errors]
        return [e for e in ends if e not in unasked], unasked

    def raise_for(self, *devices: str) -> None:
        for name in devices:
            if name in self.errors:
                raise self.errors[name].with_traceback(None)


def _sessions_of(lab: Lab, name: str, bgp: bool, bfd: bool) -> Sessions:
    out = Sessions()
    if bgp:
        sessions = lab.device(name, BgpSessions).bgp_sessions()
        out.bgp = {f"{name}:{s.local_port}": s for s in sessions.values()
                   if s.local_port is not None}
    if bfd:
        peers = lab.device(name, BfdSessions).bfd_sessions()
        out.bfd = {f"{name}:{b.local_port}": b for b in peers.values()
                   if b.local_port is not None}
    return out


def _read(lab: Lab, bgp_devices: list[str], bfd_devices: list[str],
          errors: dict[str, InfraError]) -> Sessions:
    """Every capable switch at once; a device that cannot be asked lands in ``errors``
    and is not asked again."""
    out = Sessions(errors=errors)
    names = list(dict.fromkeys(bgp_devices + bfd_devices))
    read = each_device(
        lab, names, lambda n: _sessions_of(lab, n, n in bgp_devices, n in bfd_devices), errors
    )
    for found in read.values():
        out.bgp.update(found.bgp)
        out.bfd.update(found.bfd)
    return out


def _settled(sessions: Sessions, ends: list[str], bfd_ends: list[str]) -> bool:
    """Every session up, at the ends of devices that could be asked."""
    def asked(end: str) -> bool:
        return end.split(":", 1)[0] not in sessions.errors

    for end in filter(asked, ends):
        s = sessions.bgp.get(end)
        if s is None or not s.established or not s.prefixes_received:
            return False
    return all(end in sessions.bfd and sessions.bfd[end].up for end in filter(asked, bfd_ends))


@pytest.fixture(scope="module")
def sessions(lab: Lab, testbed: Testbed) -> Sessions:
    """Read for the suite; a session found down is read again until it is up or the settle
    time (settings) runs out: a link another suite just flapped is not yet failed. Then
    the sessions are watched for ``observe.window_s`` and read again: a session that drops
    and comes back (a lossy link takes BFD, and BFD the session, down every few seconds)
    looks Established at any one read, but its uptime at the second read is shorter than
    the window."""
    bgp_devices = lab.names(capability=BgpSessions)
    bfd_devices = lab.names(capability=BfdSessions)
    ends = [e for lk in fabric_links(testbed) for e in lk.ends]
    bgp_ends = [str(e) for e in ends if e.device in bgp_devices]
    bfd_ends = [str(e) for e in ends if e.device in bfd_devices]
    settle = SETTINGS["settle"]
    deadline = labtime.monotonic() + float(settle["timeout_s"])
    errors: dict[str, InfraError] = {}
    found = _read(lab, bgp_devices, bfd_devices, errors)
    while not _settled(found, bgp_ends, bfd_ends) and labtime.monotonic() < deadline:
        labtime.sleep(float(settle["poll_s"]))
        found = _read(lab, bgp_devices, bfd_devices, errors)
    read_end = labtime.monotonic()
    labtime.sleep(float(SETTINGS["observe"]["window_s"]))
    window_s = labtime.monotonic() - read_end
    last = _read(lab, bgp_devices, bfd_devices, errors)
    last.before, last.window_s = found, window_s
    return last


def _unsteady(end: str, sessions: Sessions) -> tuple[int | None, str]:
    """1 when the session at ``end`` was not Established through the whole observation
    window (down at either read, or younger than the window: it dropped and came back),
    0 when it was; None when the device reports no uptime to tell (with why)."""
    now, then = sessions.bgp.get(end), sessions.before.bgp.get(end) if sessions.before else None
    window = f"{sessions.window_s:.1f} s window"
    if then is None or not then.established or now is None or not now.established:
        states = [s.state if s else "no session" for s in (then, now)]
        return 1, f"{states[0]} at the start of the {window}, {states[1]} at its end"
    if now.uptime_s is None:
        return None, f"{end}: the device reports no session uptime to tell a drop in the window"
    slack_s = float(SETTINGS["observe"]["uptime_slack_s"])
    if now.uptime_s + slack_s < sessions.window_s:
        return 1, f"up {now.uptime_s:.1f} s at the end of the {window}: it dropped and came back"
    return 0, f"up {now.uptime_s:.1f} s, the whole {window}"


def _labels(link: Link, end: Endpoint, testbed: Testbed) -> dict[str, str]:
    peer = testbed.peer(end.device, end.port)
    return {"link": link.name, "device": end.device, "port": end.port, "peer": str(peer)}


def _capable(link: Link, lab: Lab, capability: type) -> list[Endpoint]:
    have = set(lab.names(capability=capability))
    return [e for e in link.ends if e.device in have]


def _absent(link: Link, testbed: Testbed, capability: str) -> str:
    drivers = ", ".join(f"{e.device} ({testbed.devices[e.device].driver})" for e in link.ends)
    return f"{link.name}: neither end reports {capability} ({drivers})"


def _ends_or_hole(
    link: Link, lab: Lab, testbed: Testbed, measure: Any, capability: type,
    what: str, keys: tuple[str, ...],
) -> list[Endpoint]:
    """The link's ends that offer ``capability``; with none, its cells are not proven
    (the reason names both ends' drivers) and the test is skipped."""
    ends = _capable(link, lab, capability)
    if not ends:
        reason = _absent(link, testbed, f"{what} ({capability.__name__} capability)")
        for key in keys:
            measure.not_proven(key, reason, link=link.name)
        pytest.skip(reason)
    return ends


@pytest.mark.plan("ROUTING-1.1")
@pytest.mark.judges("routing.bgp_session_down", "routing.bgp_prefixes_received",
                    "routing.bgp_session_flaps")
def test_bgp_session(
    fabric_link: Link, sessions: Sessions, testbed: Testbed, lab: Lab, measure: Any
) -> None:
    link = fabric_link
    with allure.step("ROUTING-1.1/1: read the BGP sessions at both ends of the link"):
        ends = _ends_or_hole(link, lab, testbed, measure, BgpSessions, "BGP sessions",
                             ("routing.bgp_session_down", "routing.bgp_prefixes_received",
                              "routing.bgp_session_flaps"))
        ends, unasked = sessions.split(ends)
        found = {str(e): sessions.bgp.get(str(e)) for e in ends}
        allure.attach(json.dumps({e: s and vars(s) for e, s in found.items()}, indent=2),
                      name="BGP sessions", attachment_type=allure.attachment_type.JSON)
    with allure.step("ROUTING-1.1/2: each session Established, with routes received"):
        for end in ends:
            s = found[str(end)]
            labels = _labels(link, end, testbed)
            state = "no BGP session on this port" if s is None else s.state
            measure("bgp_session_down", 0 if s is not None and s.established else 1,
                    key="routing.bgp_session_down", state=state, **labels)
            unsteady, how = _unsteady(str(end), sessions)
            if unsteady is None:
                measure.not_proven("routing.bgp_session_flaps", how, **labels)
            else:
                measure("bgp_session_flaps", unsteady, key="routing.bgp_session_flaps",
                        seen=how, **labels)
            if s is None or not s.established:
                continue  # a session that is down has no routes to count
            if s.prefixes_received is None:
                measure.not_proven("routing.bgp_prefixes_received",
                                   f"{end}: the session does not report its received prefixes",
                                   **labels)
                continue
            measure("bgp_prefixes_received", s.prefixes_received,
                    key="routing.bgp_prefixes_received", **labels)
    # an end that could not be asked leaves the link unproven (broken), unless the other end
    # already shows the session down: that failure stands (the plugin keeps it)
    sessions.raise_for(*(e.device for e in unasked))


@pytest.mark.plan("ROUTING-1.2")
@pytest.mark.judges("routing.bfd_session_down")
def test_bfd_session(
    fabric_link: Link, sessions: Sessions, testbed: Testbed, lab: Lab, measure: Any
) -> None:
    link = fabric_link
    with allure.step("ROUTING-1.2/1: read the BFD sessions at both ends of the link"):
        ends = _ends_or_hole(link, lab, testbed, measure, BfdSessions, "BFD sessions",
                             ("routing.bfd_session_down",))
        ends, unasked = sessions.split(ends)
    with allure.step("ROUTING-1.2/2: each session up"):
        for end in ends:
            b = sessions.bfd.get(str(end))
            status = "no BFD session on this port" if b is None else b.status
            measure("bfd_session_down", 0 if b is not None and b.up else 1,
                    key="routing.bfd_session_down", status=status,
                    **_labels(link, end, testbed))
    sessions.raise_for(*(e.device for e in unasked))  # as for BGP


@pytest.mark.plan("ROUTING-2.1")
@pytest.mark.judges("routing.bfd_detection_time_ms")
def test_bfd_detection_time(
    fabric_link: Link, sessions: Sessions, testbed: Testbed, lab: Lab, measure: Any
) -> None:
    link = fabric_link
    key = "routing.bfd_detection_time_ms"
    with allure.step("ROUTING-2.1/1: read the BFD timers at both ends of the link"):
        capable = _ends_or_hole(link, lab, testbed, measure, BfdSessions, "BFD timers", (key,))
        ends, unasked = sessions.split(capable)
    with allure.step("ROUTING-2.1/2: each end's detection time (RFC 5880 6.8.4) within the limit"):
        blind = [e for e in link.ends if e not in capable]
        for end in blind:  # its detection time is its own: the far end cannot speak for it
            measure.not_proven(key, f"{end}: {testbed.devices[end.device].driver} driver "
                               "reports no BFD timers (BfdSessions capability)", link=link.name)
        for end in ends:
            b = sessions.bfd.get(str(end))
            labels = _labels(link, end, testbed)
            if b is None or not b.up or b.detection_time_ms is None:
                why = "no BFD session on this port" if b is None else \
                      f"session {b.status}: no timers negotiated with the peer"
                measure.not_proven(key, f"{end}: {why}", **labels)
                continue
            measure("bfd_detection_time_ms", b.detection_time_ms, key=key,
                    peer_detect_multiplier=b.remote_detect_multiplier,
                    receive_interval_ms=b.receive_interval_ms,
                    peer_transmit_interval_ms=b.remote_transmit_interval_ms, **labels)
    sessions.raise_for(*(e.device for e in unasked))  # as for BGP
