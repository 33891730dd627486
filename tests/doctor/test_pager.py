"""Evidence that accumulates (issue 34 item 1): a thin steady loss adds up across intervals
in the probe ledger, a page holds until clean evidence clears it, a healthy mesh pages
nothing."""

from __future__ import annotations

import numpy as np

from labtest.doctor.judge import Evidence
from labtest.doctor.localise import Suspect, rank
from labtest.doctor.pager import CLEAR_INTERVALS, PAGE_POSTERIOR, Pager, probe_weight
from labtest.measure.probes import Ledger, ProbePath, blame

LINK = "h1--l0"


def _mesh(loss: float, rng: np.random.Generator, bad: str = LINK) -> list[ProbePath]:
    """4 leaves x 2 spines, two hosts per leaf; each host probes every other-leaf host on
    both spines, 10 probes a path (as the live mesh's traceroute -q 10)."""
    hosts = {f"h{i}": f"l{i // 2}" for i in range(8)}
    paths = []
    for a, la in hosts.items():
        for b, lb in hosts.items():
            if la == lb:
                continue
            for s in ("s0", "s1"):
                links = (f"{a}--{la}", f"{la}--{s}", f"{lb}--{s}", f"{b}--{lb}")
                lost = int(rng.binomial(10, loss)) if bad in links else 0
                paths.append(ProbePath(a, b, links, 10, lost))
    return paths


def test_a_thin_loss_no_interval_names_adds_up_in_the_ledger() -> None:
    rng = np.random.default_rng(4)
    ledger = Ledger()
    posts = []
    for _ in range(6):
        paths = _mesh(0.01, rng)
        assert all(b.confidence < PAGE_POSTERIOR for b in blame(paths))  # never alone
        ledger.add(paths)
        posts.append(max((b.confidence for b in ledger.blame() if b.link == LINK), default=0.0))
    assert posts[-1] >= PAGE_POSTERIOR, posts
    (b,) = [b for b in ledger.blame() if b.confidence >= PAGE_POSTERIOR]
    assert b.link == LINK and b.window == 6 and b.text().startswith("probes over the last 6")


def test_a_healthy_mesh_pages_nothing_and_clears_every_link() -> None:
    rng = np.random.default_rng(5)
    ledger = Ledger()
    for _ in range(3):
        ledger.add(_mesh(0.0, rng))
        assert ledger.blame() == []
    assert all(ledger.cleared(lk) for lk in ledger.clean)
    assert not Ledger().cleared(LINK)  # no probe yet: not cleared


def test_a_healthy_decision_is_not_restarted_by_background_loss() -> None:
    """Issue 34's noise evaluation: probe answers lost one in a thousand whatever the path
    (a busy host, an ICMP rate limit) kept restarting links' clean runs, and a healthy
    noisy lab never decided healthy; the window's counts, losses counted, rule 1 % out."""
    rng = np.random.default_rng(8)
    ledger = Ledger()
    for _ in range(6):
        paths = [ProbePath(p.src, p.dst, p.links, p.sent, int(rng.binomial(p.sent, 1e-3)))
                 for p in _mesh(0.0, rng)]
        ledger.add(paths)
    assert ledger.ruled_out() == set(ledger.clean), set(ledger.clean) - ledger.ruled_out()
    assert not all(ledger.cleared(lk) for lk in ledger.clean)  # clean runs restarted
    lossy = Ledger()
    for _ in range(6):
        lossy.add(_mesh(0.02, rng))
    assert LINK in lossy.clean and LINK not in lossy.ruled_out()


def test_a_probe_page_holds_until_the_links_clean_run_clears_it() -> None:
    rng = np.random.default_rng(6)
    ledger, pager = Ledger(), Pager()
    pages: list[list[str]] = []
    for i in range(14):
        loss = 0.03 if i < 6 else 0.0  # the fault ends after six intervals
        paths = _mesh(loss, rng)
        now = blame(paths)
        ledger.add(paths, [b.link for b in now if b.confidence >= PAGE_POSTERIOR])
        evidence = [Evidence(b.link, b.link, "probe_loss", 0.0, "PROBE", b.text(), None,
                             probe_weight(b.confidence)) for b in [*now, *ledger.blame()]]
        paged, _ = pager.update(rank(evidence), i + 1, 10.0 * i, ledger.cleared)
        pages.append([s.unit for s in paged])
    first = next(i for i, p in enumerate(pages) if p)
    assert first < 6 and all(p == [LINK] for p in pages[first:6]), pages  # no flicker
    assert pages[-1] == []  # cleared once the fault was gone
    gone = next(i for i in range(6, 14) if not pages[i])
    assert ledger.clean[LINK] > 0 and gone <= 12, pages


def test_a_page_on_readings_holds_for_clear_intervals() -> None:
    pager = Pager()
    fail = Suspect("a:p--b:q", "link", 0.9, [Evidence("a:p--b:q", "a:p", "pre_fec_ber", 1e-4,
                                                      "FAIL", "pre-FEC BER", None, 0.9)])
    paged, _ = pager.update([fail], 1, 0.0, lambda _: True)
    assert [(s.unit, s.paged_interval, s.held) for s in paged] == [("a:p--b:q", 1, 0)]
    for i in range(CLEAR_INTERVALS - 1):
        paged, _ = pager.update([], 2 + i, 10.0, lambda _: True)
        assert [(s.unit, s.held) for s in paged] == [("a:p--b:q", i + 1)]
    paged, _ = pager.update([], CLEAR_INTERVALS + 1, 30.0, lambda _: True)
    assert paged == [] and pager.pages == {}


def test_time_to_detect_runs_from_the_first_evidence() -> None:
    pager = Pager()
    watched = Suspect("x", "link", 0.3, [Evidence("x", "x", "drift", 0, "CHANGE", "", None, 0.3)])
    _, w = pager.update([watched], 1, 5.0, lambda _: True)
    assert [s.unit for s in w] == ["x"]
    paged, _ = pager.update([Suspect("x", "link", 0.9, watched.evidence)], 2, 17.0,
                            lambda _: True)
    assert paged[0].ttd_s == 12.0 and paged[0].paged_interval == 2


def test_a_twin_whose_partner_fails_its_own_readings_is_explained_away() -> None:
    """Issue 34's driver-level evaluation: a flapping host8 link (its down events read at
    leaf4) also paged host6's link, whose only probes in the dark second had gone to host8:
    the probes could not tell the two apart, the readings can."""
    from labtest.doctor.evidence import PortReading, Snapshot
    from labtest.doctor.judge import Plan
    from labtest.doctor.service import Doctor
    from labtest.measure import load_limits
    from labtest.run import default_testbed
    from labtest.testbed import load_testbed

    tb = load_testbed(default_testbed())
    h6, h8 = "host6:eth0--leaf3:Ethernet4/1", "host8:eth0--leaf4:Ethernet24"
    up, down = "leaf3:Ethernet1/1--spine1:Ethernet16", "leaf4:Ethernet0--spine1:Ethernet24"
    h5, h7 = "host5:eth0--leaf3:Ethernet3/1", "host7:eth0--leaf4:Ethernet16"
    probes = ([ProbePath("host6", "host8", (h6, up, down, h8), 10, 10)] * 8
              + [ProbePath("host5", "host7", (h5, up, down, h7), 10, 0)] * 8)

    def report(flapped: bool) -> list[str]:
        doctor = Doctor(Plan.of(tb), load_limits(tb.limits))  # type: ignore[arg-type]
        leaf4 = PortReading("leaf4", "Ethernet24", 0.0, oper_up=True, oper_samples=2,
                            down_events=2 if flapped else 0)
        return [s.unit for s in doctor.step(Snapshot(ports={leaf4.name: leaf4}), probes)
                .suspects]

    assert report(flapped=True) == [h8]
    assert set(report(flapped=False)) == {h6, h8}  # no reading tells them apart: both paged


def test_a_bottleneck_reading_while_another_link_went_down_is_only_marginal() -> None:
    """Issue 34's evaluation: a flapping leaf3--spine2 link rerouted its traffic and
    spine1:Ethernet16, draining 0.83 of its speed while that traffic queued, was paged second."""
    from labtest.doctor.judge import WEIGHTS
    from labtest.doctor.service import _moved_traffic

    flap = Evidence("leaf3:Ethernet2/1--spine2:Ethernet3/1", "spine2:Ethernet3/1", "flaps", 6,
                    "FAIL", "link down events", "link.flaps", WEIGHTS["FAIL"])
    slow = Evidence("leaf3:Ethernet1/1--spine1:Ethernet16", "spine1:Ethernet16",
                    "bottleneck_rate", 0.83, "FAIL", "egress 334 Gb/s",
                    "roce.bw_fraction_of_line", WEIGHTS["FAIL"])
    moved = _moved_traffic([flap, slow])
    assert moved[0] == flap
    assert (moved[1].verdict, moved[1].weight) == ("MARGINAL", WEIGHTS["MARGINAL"])
    assert "went down in the interval" in moved[1].text
    assert rank(moved)[0].unit == flap.unit and rank(moved)[1].confidence < 0.5
    assert _moved_traffic([slow]) == [slow]  # no link went down: a bottleneck stands
