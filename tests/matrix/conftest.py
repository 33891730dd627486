"""Print the detection matrix's seed and draws before it runs (issue 14: the seed and
every draw printed), also under CI's ``-q``."""

from __future__ import annotations

import os

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    if os.environ.get("LABTEST_MATRIX") != "1":
        return
    from test_detection_matrix import CASE_LIST, CI_PLAN, NXOS_PLAN

    ids = {getattr(item, "callspec", None) and item.callspec.id for item in session.items}
    rows = [c for c in CASE_LIST if c.name in ids]
    if not rows:
        return
    out = session.config.pluginmanager.get_plugin("terminalreporter")
    write = out.write_line if out is not None else print
    write(f"detection matrix: seed {CI_PLAN.seed} (matrix_data.CI_PLAN), {len(rows)} rows "
          f"drawn (nxos-*: NXOS_PLAN, seed {NXOS_PLAN.seed}, the NX-OS lab); "
          "python -m labtest.matrix --list prints them too")
    for c in rows:
        write(f"  {c.name}: {c.describe()} [{c.note or 'healthy'}]")
