"""Which links' routing sessions dropped between two reads (labtest.fixtures.route_moves):
the paths suite labels what it measured meanwhile ``moved`` with them (issue 39, kernel
campaign 20261215/014: a lossy link's flapping session rehashed the other spine's flows)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from labtest.capabilities.routing import BgpSession
from labtest.errors import TransportTimeout
from labtest.fixtures import route_moves
from labtest.fixtures.route_moves import SessionsRead, moved_links, read_sessions, unasked
from labtest.testbed import load_testbed

KERNEL = Path(__file__).resolve().parents[2] / "testbeds" / "kernel" / "leafspine.yaml"


def _up(port: str, uptime_s: float | None) -> BgpSession:
    return BgpSession("10.0.0.1", port, "Established", uptime_s, 3)


class _Lab:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.testbed = load_testbed(KERNEL, check_drivers=False)
        self.answers = answers

    def names(self, capability: Any = None) -> list[str]:
        return list(self.answers)

    def device(self, name: str, capability: Any = None) -> Any:
        answer = self.answers[name]

        def bgp_sessions() -> dict[str, BgpSession]:
            if isinstance(answer, Exception):
                raise answer
            return {f"10.0.{i}.1": s for i, s in enumerate(answer)}

        return SimpleNamespace(bgp_sessions=bgp_sessions)


def _read(at_s: float, sessions: dict[str, BgpSession], asked: set[str]) -> SessionsRead:
    return SessionsRead(at_s, sessions, frozenset(asked))


def test_a_session_that_dropped_and_came_back_names_its_link() -> None:
    lab = _Lab({})
    before = _read(100.0, {"leaf2:Ethernet4": _up("Ethernet4", 300.0),
                           "leaf1:Ethernet0": _up("Ethernet0", 300.0)}, {"leaf1", "leaf2"})
    after = _read(120.0, {"leaf2:Ethernet4": _up("Ethernet4", 4.0),  # came back 4 s ago
                          "leaf1:Ethernet0": _up("Ethernet0", 319.5)}, {"leaf1", "leaf2"})
    moved = moved_links(before, after, lab, uptime_slack_s=1.0)  # type: ignore[arg-type]
    assert moved == ["leaf2:Ethernet4--spine2:Ethernet4"]


@pytest.mark.parametrize(("was", "now", "moved"), [
    (BgpSession("x", "Ethernet0", "Established", 300.0, 3),
     BgpSession("x", "Ethernet0", "Active", None, None), True),  # went down
    (BgpSession("x", "Ethernet0", "Active", None, None),
     BgpSession("x", "Ethernet0", "Established", 2.0, 3), True),  # came up
    (BgpSession("x", "Ethernet0", "Active", None, None),
     BgpSession("x", "Ethernet0", "Active", None, None), False),  # down all along: no move
    (BgpSession("x", "Ethernet0", "Established", 300.0, 3), None, True),  # gone
    (BgpSession("x", "Ethernet0", "Established", 300.0, 3),
     BgpSession("x", "Ethernet0", "Established", None, 3), False),  # no uptime: no claim
    (BgpSession("x", "Ethernet0", "Established", 300.0, 3),
     BgpSession("x", "Ethernet0", "Established", 19.2, 3), False),  # whole seconds, skew
])
def test_what_counts_as_a_move(was: BgpSession, now: BgpSession | None, moved: bool) -> None:
    end = "leaf1:Ethernet0"
    before = _read(0.0, {end: was}, {"leaf1"})
    after = _read(20.0, {end: now} if now else {}, {"leaf1"})
    want = ["leaf1:Ethernet0--spine1:Ethernet0"] if moved else []
    assert moved_links(before, after, _Lab({}), uptime_slack_s=1.0) == want  # type: ignore[arg-type]


def test_a_switch_not_asked_both_times_says_nothing() -> None:
    end = "leaf1:Ethernet0"
    before = _read(0.0, {end: _up("Ethernet0", 300.0)}, {"leaf1"})
    after = _read(20.0, {}, set())  # leaf1 could not be asked the second time
    assert moved_links(before, after, _Lab({}), uptime_slack_s=1.0) == []  # type: ignore[arg-type]


def test_read_sessions_keys_by_local_end_and_leaves_out_who_cannot_be_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    lab = _Lab({"leaf1": [_up("Ethernet0", 10.0), _up("Ethernet4", 10.0),
                          BgpSession("10.9.9.9", None, "Active", None, None)],
                "leaf2": TransportTimeout("leaf2", "no answer")})
    monkeypatch.setattr(route_moves.labtime, "monotonic", lambda: 42.0)
    read = read_sessions(lab)  # type: ignore[arg-type]
    assert read.at_s == 42.0 and read.asked == {"leaf1"}
    assert set(read.sessions) == {"leaf1:Ethernet0", "leaf1:Ethernet4"}
    # said, not dropped: a route that moved on leaf2 is not known
    assert read.unread == {"leaf2": "TransportTimeout: [leaf2] no answer"}
    assert set(unasked(read, SessionsRead(50.0, {}, frozenset({"leaf1", "leaf2"})))) == {"leaf2"}
