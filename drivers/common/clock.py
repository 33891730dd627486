"""Parser of ``date +%s.%N``: a Linux-based device's clock (SONiC, a RoCE host).

GNU date prints the epoch seconds, a dot and exactly nine digits of
nanoseconds on one line. Anything else is refused, notably busybox's or an old
date's answer that leaves ``%N`` unexpanded (``1764603189.N``): its fraction
would be a guess, and a window computed from it could be a second off.
"""

from __future__ import annotations

import math
import re

from labtest.errors import ParseError
from labtest.parsing import Garbled, check_cut, check_damage

#: the command whose answer ``parse_date_epoch`` reads
DATE_EPOCH_COMMAND = "date +%s.%N"

_EPOCH = re.compile(r"(\d{1,12})\.(\d{9})")


def _read(text: str) -> float:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1:
        raise ValueError(f"expected one line, got {len(lines)}")
    m = _EPOCH.fullmatch(lines[0])
    if m is None:
        raise ValueError(f"{lines[0][:40]!r} is not SECONDS.NANOSECONDS (is %N supported?)")
    value = int(m.group(1)) + int(m.group(2)) / 1e9
    if not math.isfinite(value):
        raise ValueError(f"{lines[0][:40]!r} is not a finite time")
    return value


def parse_date_epoch(text: str, device: str = "<parse>") -> float:
    """Seconds since the epoch from ``date +%s.%N``; ParseError on anything else."""
    try:
        check_damage(text)
        value = _read(text)
        check_cut(text, value, _read)
    except Garbled as exc:
        raise ParseError(device, f"{DATE_EPOCH_COMMAND}: {exc}", raw=text,
                         command=DATE_EPOCH_COMMAND, line=exc.line,
                         expected=exc.expected) from None
    except ValueError as exc:
        raise ParseError(device, f"{DATE_EPOCH_COMMAND}: {exc}", raw=text,
                         command=DATE_EPOCH_COMMAND, expected="SECONDS.NANOSECONDS") from None
    return value
