"""The README's command schedules by xdist group (the layout in ``tests/conftest.py``).

Workers parse the controller's command line, not the options its conftest set, so a
worker once tagged nothing and loadgroup scheduled like load: module-scoped emulated labs
were built on every worker and kernel labs ran side by side.
"""

from __future__ import annotations

import os

import pytest


def test_a_worker_of_the_readme_command_tags_its_items_with_their_group(
    request: pytest.FixtureRequest,
) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ or "LABTEST_XDIST_TURN" not in os.environ:
        pytest.skip("only the README's command (xdist workers, loadgroup) has groups to check")
    assert request.config.option.loadgroup
    assert request.node.nodeid.endswith("@tests/scale/test_xdist_groups.py")
