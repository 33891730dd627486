"""The emulated devices' clock: wall-clock epoch at the fabric's start, then virtual time.

A device's counters advance with the fabric's virtual clock (``fabric.now_s()``,
``time_scale`` virtual seconds per wall second), so its own clock must too: a
suite that brackets two counter reads with the device's clock then sees the
window the counters were kept over, as on real hardware. Every device of one
fabric shares the anchor (as NTP-synced switches would), taken at the first
reading, so a device's clock starts near the host's wall clock.
"""

from __future__ import annotations

import threading
import time
import weakref
from datetime import UTC, datetime

from labtest.emulation.model.fabric import Fabric

_ANCHORS: weakref.WeakKeyDictionary[Fabric, float] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def epoch_s(fabric: Fabric) -> float:
    """The devices' time on ``fabric``: seconds since the Unix epoch, at virtual pace."""
    now = fabric.now_s()
    with _LOCK:
        anchor = _ANCHORS.get(fabric)
        if anchor is None:
            anchor = _ANCHORS[fabric] = time.time() - now
    return anchor + now


def date_output(args: list[str], now_epoch_s: float) -> tuple[str, str, int]:
    """What GNU ``date`` prints for ``args`` at ``now_epoch_s`` (UTC): ``+FORMAT`` with
    ``%s``, ``%N`` and the strftime directives, or the default layout; (stdout, stderr,
    status)."""
    if not args:
        return f"{datetime.fromtimestamp(now_epoch_s, UTC):%a %b %e %H:%M:%S UTC %Y}\n", "", 0
    if len(args) > 1 or not args[0].startswith("+"):
        return "", f"date: invalid date '{args[0]}'\n", 1
    seconds = int(now_epoch_s)
    nanos = min(round((now_epoch_s - seconds) * 1e9), 999_999_999)
    stamp = datetime.fromtimestamp(now_epoch_s, UTC)
    out, fmt, i = [], args[0][1:], 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            code = fmt[i + 1]
            out.append(
                str(seconds) if code == "s"
                else f"{nanos:09d}" if code == "N"
                else "%" if code == "%"
                else stamp.strftime(f"%{code}")
            )
            i += 2
        else:
            out.append(fmt[i])
            i += 1
    return "".join(out) + "\n", "", 0
