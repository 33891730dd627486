"""Device groups for pytest-xdist, and a guard against pytest/xdist pairs that ignore them.

Tests that touch the same device must never run at once on two workers. A test
names its devices with ``@pytest.mark.devices("leaf1", "spine1")`` (or gets
them from its ``device``/``link``/``host_pair`` parameters); here each such
test joins the xdist group of its first device, so ``-n N --dist loadgroup``
keeps them on one worker. pytest 9.2 with xdist 3.8 silently drops groups
(stack probe, finding 1): the guard fails those tests loudly instead.
"""

from __future__ import annotations

import pytest

_PARAMS = ("device_name", "device", "link", "host_pair", "switch", "host")


def devices_of(item: pytest.Item) -> list[str]:
    names: list[str] = []
    for mark in item.iter_markers("devices"):
        names += [str(a) for a in mark.args]
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        for key in _PARAMS:
            value = callspec.params.get(key)
            if isinstance(value, str):
                names.append(value.split(":", 1)[0])
            elif hasattr(value, "ends"):  # a Link
                names += [end.device for end in value.ends]
            elif isinstance(value, tuple):
                names += [str(v).split(":", 1)[0] for v in value]
    return sorted(set(names))


def add_groups(items: list[pytest.Item]) -> None:
    for item in items:
        names = devices_of(item)
        if names and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(name=names[0]))


def check_groups_honoured(item: pytest.Item) -> None:
    """On an xdist worker with --dist loadgroup, a grouped test must carry '@group'."""
    config = item.config
    if not hasattr(config, "workerinput"):
        return
    if config.getoption("dist", "no") != "loadgroup":
        return
    if item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
        pytest.fail(
            "xdist_group ignored by this pytest/pytest-xdist pair: two workers could drive "
            "the same device at once (pin pytest<9.2)",
            pytrace=False,
        )
