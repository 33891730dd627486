"""The sysfs hw_counters fallback (``grep -H . *``) reads every line or refuses the listing."""

from __future__ import annotations

import pytest

from labtest.drivers.linux.parsers.rdma import parse_sysfs_hw_counters
from labtest.errors import ParseError


def test_reads_each_counter_file() -> None:
    rec = parse_sysfs_hw_counters("np_cnp_sent:1052612505\nout_of_sequence:1811101\n", port=1)
    assert rec.port == 1 and rec.np_cnp_sent == 1052612505 and rec.out_of_sequence == 1811101


@pytest.mark.parametrize("text, why", [
    ("", "no 'counter:value' lines"),
    ("np_cnp_sent:1\nnp_cnp_sent:2\n", "twice"),
    ("np_cnp_sent:1\ngrep: lifespan: Permission denied\n", "not a 'counter:value' line"),
    ("Port 1 hw counters:\nnp_cnp_sent: 1\n", "not a 'counter:value' line"),
    ("np_cnp_sent:12x\n", "not a 'counter:value' line"),
])
def test_refuses_what_it_cannot_read(text: str, why: str) -> None:
    with pytest.raises(ParseError, match=why):
        parse_sysfs_hw_counters(text)
