"""This site's own optics check: module temperature on every leaf, against our own limit.

An example of a project suite: it asks a capability (``Transceivers``) through the
``lab`` fixture and records measurements with ``measure``; the limit comes from
``limits.yaml`` (``site.module_temperature_c``), so the number and its source live
in data, not in this file; ``judges`` declares the limit keys the test records under.
"""

from typing import Any

import pytest


@pytest.mark.needs("Transceivers", role="leaf")
@pytest.mark.judges("site.module_temperature_c")  # measure refuses any key not declared
def test_module_temperature(lab: Any, measure: Any) -> None:
    for name, leaf in lab.by_role("leaf").items():
        for port, xcvr in leaf.transceivers().items():
            if xcvr.temperature_c is None:  # a hole is said, never skipped in silence
                measure.not_proven("site.module_temperature_c", "the module reports no "
                                   "temperature", device=name, port=port)
                continue
            measure("module_temperature_c", xcvr.temperature_c,
                    key="site.module_temperature_c", device=name, port=port)
