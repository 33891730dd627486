"""The emulated devices' clock (``date`` on SONiC and Linux hosts, ``show clock`` on EOS)
runs on the fabric's virtual time, like their counters, and reads with the real parsers."""

from __future__ import annotations

import json

import pytest
import switch_helpers as h

from labtest.drivers.common.clock import DATE_EPOCH_COMMAND, parse_date_epoch
from labtest.drivers.eos import parsers as eos_parsers
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import eos, linux, sonic
from labtest.testbed.model import Device

HOST_VARS = {"rdma_device": "mlx5_0", "netdev": "eth0", "gid_index": 3}


@pytest.fixture
def lab():
    tb = h.testbed()
    tb.devices["host1"] = Device(role="host", driver="linux", vars=HOST_VARS)
    fabric = Fabric(tb)  # a stepped clock: virtual time moves only when advanced
    served = {
        "leaf1": sonic.serve(fabric, "leaf1", tb.devices["leaf1"]),
        "spine1": eos.serve(fabric, "spine1", tb.devices["spine1"]),
        "host1": linux.serve(fabric, "host1", tb.devices["host1"]),
    }
    yield fabric, served
    for s in served.values():
        if s.stop is not None:
            s.stop()


def _ask(served, command: str) -> str:
    reply = served.cli().run(command)
    assert reply.exit_status == 0, (command, reply)
    return reply.output


def _clocks(served) -> dict[str, float]:
    return {
        "leaf1": parse_date_epoch(_ask(served["leaf1"], DATE_EPOCH_COMMAND)),
        "host1": parse_date_epoch(_ask(served["host1"], DATE_EPOCH_COMMAND)),
        "spine1": eos_parsers.parse_clock(_ask(served["spine1"], "show clock | json")),
    }


def test_every_device_clock_follows_virtual_time(lab) -> None:
    fabric, served = lab
    t0 = _clocks(served)
    fabric.advance(37.25)
    t1 = _clocks(served)
    for name in t0:  # exactly the virtual step: the wall clock did not enter
        assert t1[name] - t0[name] == pytest.approx(37.25, abs=1e-5), name
    # one anchor per fabric: the devices agree, as NTP-synced switches would
    assert max(t1.values()) - min(t1.values()) < 1e-5


def test_eos_clock_has_the_shape_of_real_eos(lab) -> None:
    _, served = lab
    ours = json.loads(_ask(served["spine1"], "show clock | json"))
    real = [h.load_json(h.sample("eos", stem)) for stem in (
        "show_clock_json__anta_asynceapi_ceoslab", "show_clock_json__vane_fixture_dut")]
    assert h.json_problems(ours, real) == []
    text = _ask(served["spine1"], "show clock").splitlines()
    assert text[1:] == ["Timezone: UTC", "Clock source: local"]


def test_date_answers_like_gnu_date(lab) -> None:
    _, served = lab
    for name in ("leaf1", "host1"):
        assert _ask(served[name], "date +%Y").strip().isdigit()
        bad = served[name].cli().run("date tomorrow")
        assert bad.exit_status == 1 and "invalid date" in bad.stderr
