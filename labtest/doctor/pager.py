"""Pages that hold: a unit is paged when its evidence suffices and stays paged until clean
evidence clears it.

Without memory a 2 % lossy link flickers: named in three intervals, gone in the fourth,
because each interval's evidence starts from nothing. The doctor's probe evidence now
accumulates (``probes.Ledger``); this module keeps the page itself. A unit is paged when
the interval's ranked confidence reaches ``localise.REPORT_CONFIDENCE`` (probe evidence
reaches it only at the engine's posterior ``PAGE_POSTERIOR``: see ``probe_weight``), and
stays paged, *held*, while the evidence that paged it is not yet cleared:

* a unit probes blamed is cleared when its own clean run of probes (those through it
  since its last lost one) rules out a loss rate of ``DETECT_LOSS`` at ``1 - ALPHA``
  (``probes.Ledger.cleared``: 459 clean probes), and its window's posterior fell below
  the paging one;
* a unit paged on readings (limits verdicts, flaps, cabling) is cleared after
  ``CLEAR_INTERVALS`` consecutive intervals without them: a reading is judged afresh each
  interval, and one passing read of a connector that fails every other read is no cure.

Time to detect is the device time from the unit's first evidence (watched or paged) to
its page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from labtest.doctor.localise import REPORT_CONFIDENCE, Suspect, order
from labtest.measure.probes import ALPHA

#: a probe page is stated at the false-alarm rate ALPHA: the engine's posterior must reach it
PAGE_POSTERIOR = 1.0 - ALPHA
#: clean intervals that clear a unit paged on readings
CLEAR_INTERVALS = 3
#: what probe evidence below PAGE_POSTERIOR weighs: watched, as a drift alone is
WATCHED_PROBE_WEIGHT = 0.3


def probe_weight(posterior: float) -> float:
    """A probe blame's weight in the ranking: its posterior once it reaches the paging one,
    else a watched fact (pages only beside other evidence, as a drift does)."""
    return posterior if posterior >= PAGE_POSTERIOR else min(posterior, WATCHED_PROBE_WEIGHT)


@dataclass
class Page:
    unit: str
    first_interval: int
    first_s: float  # device seconds since the doctor's first reading
    paged_interval: int | None = None
    paged_s: float | None = None
    clean: int = 0  # consecutive intervals below the paging confidence since it was paged
    last: Suspect | None = None  # the suspect as last paged (what a held page shows)


@dataclass
class Pager:
    pages: dict[str, Page] = field(default_factory=dict)

    def update(self, ranked: list[Suspect], interval: int, now_s: float,
               probe_cleared: Callable[[str], bool]) -> tuple[list[Suspect], list[Suspect]]:
        """(paged, watched) for this interval: ``ranked`` is its evidence, ``probe_cleared``
        says whether a link's clean probes have cleared it."""
        seen = {s.unit: s for s in ranked}
        paged: list[Suspect] = []
        watched: list[Suspect] = []
        for s in ranked:
            page = self.pages.setdefault(s.unit, Page(s.unit, interval, now_s))
            if s.confidence < REPORT_CONFIDENCE:
                continue
            if page.paged_interval is None:
                page.paged_interval, page.paged_s = interval, now_s
            page.clean, page.last = 0, s
            paged.append(self._stamp(s, page, held=False))
        for unit, page in list(self.pages.items()):
            now = seen.get(unit)
            if now is not None and now.confidence >= REPORT_CONFIDENCE:
                continue
            if page.paged_interval is None or page.last is None:
                if now is None:
                    del self.pages[unit]  # evidence gone before it paged: start afresh
                else:
                    watched.append(now)
                continue
            page.clean += 1
            by_probes = any(e.verdict == "PROBE" for e in page.last.evidence)
            if probe_cleared(unit) if by_probes else page.clean >= CLEAR_INTERVALS:
                del self.pages[unit]
                if now is not None:
                    watched.append(now)
                continue
            paged.append(self._stamp(page.last, page, held=True))
        paged.sort(key=lambda s: (s.held > 0, *order(s)))
        return paged, watched

    @staticmethod
    def _stamp(s: Suspect, page: Page, *, held: bool) -> Suspect:
        return replace(s, paged_interval=page.paged_interval,
                       ttd_s=(page.paged_s or 0.0) - page.first_s,
                       held=page.clean if held else 0)
