"""A switch's show command answers from one model instant, on every switch OS.

Under a training job's load every read of the emulated model stepped the fluid model to a
slightly later now: one show command stepped it 8-44 times (SONiC's counters 20, EOS's
``phy detail`` 44), ~1,700 times in a doctor round of six switches, and one table's rows
were read at different instants. A show command now holds one instant; a configuration
command still meets the model at now."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import eos, nxos, sonic
from labtest.testbed import load_testbed

TESTBED = Path(__file__).resolve().parents[2] / "testbeds" / "emulated" / "leafspine-nxos.yaml"
#: (switch of the testbed, its personality, show commands its driver sends, a config line)
SWITCHES = [
    ("leaf1", sonic, ["show interfaces counters", "show queue counters",
                      "show interfaces counters fec-stats"],
     "sudo config interface shutdown Ethernet0"),
    ("spine2", eos, ["show interfaces counters | json", "show interfaces phy detail | json",
                     "sh int status | json"], None),
    ("leaf2", nxos, ["show interface counters", "show interface transceiver details",
                     "show interface counters errors"], None),
]


@pytest.fixture
def loaded() -> Iterator[Fabric]:
    """A fabric under a job's all-to-all whose clock moves on at every read."""
    tb = load_testbed(TESTBED)
    ticks = iter(range(1, 10**9))
    fabric = Fabric(tb)
    fabric.clock = type(fabric.clock)(1.0, realtime=True, wall=lambda: next(ticks) * 1e-3)
    hosts = [n for n, d in tb.devices.items() if d.role == "host"]
    for i, h in enumerate(hosts):
        for step in (2, 4, 6):
            fabric.traffic.start_roce(h, hosts[(i + step) % len(hosts)], qps=2)
    fabric.now_s()
    assert fabric.traffic.quiet_until_s() <= fabric.now_s()  # busy: every read steps
    yield fabric


@pytest.mark.parametrize(("name", "personality", "shows", "config"), SWITCHES,
                         ids=[s[0] for s in SWITCHES])
def test_a_show_command_under_load_steps_the_model_once(
        loaded: Fabric, name: str, personality: Any, shows: list[str],
        config: str | None) -> None:
    served = personality.serve(loaded, name, loaded.testbed.devices[name])
    try:
        cli = served.cli()
        for command in shows:
            before = loaded._syncs
            reply = cli.run(command)
            assert reply.exit_status == 0 and reply.output.strip(), (command, reply)
            assert loaded._syncs - before <= 1, (command, loaded._syncs - before)
        if config is not None:  # a change is applied at now, outside any instant
            assert cli.run(config).exit_status == 0
            assert loaded._instant is None and loaded.interface(name, "Ethernet0").admin_up is False
    finally:
        if served.stop is not None:
            served.stop()
