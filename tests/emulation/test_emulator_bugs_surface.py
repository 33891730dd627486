"""An emulator bug or a bad testbed var surfaces as an error, never as a simulated product
fault or silent defaults (issue 21: no masking excepts, no swallowed ImportError)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from switch_helpers import testbed as switch_testbed
from test_personality_linux import make_testbed, serve_all

from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import SwitchState
from labtest.errors import ConfigError


def test_a_bug_in_the_traffic_model_is_not_reported_as_an_nccl_failure(monkeypatch):
    h = serve_all(make_testbed(hosts=2))
    try:
        def bug(*_args, **_kw):
            raise KeyError("a bug in the model")

        monkeypatch.setattr(h.fabric.traffic, "run_allreduce", bug)
        reply = h.run("host1", "mpirun -np 2 -H host1:1,host2:1 all_reduce_perf -b 8 -e 64")
        # the session's answer to any emulator exception (logged with its traceback): broken
        # infrastructure for the driver, not NCCL's completion error (a product failure)
        assert reply.exit_status == 1 and "emulator error: KeyError" in reply.stderr
        assert "NCCL" not in reply.stderr
    finally:
        for s in h.served.values():
            assert s.stop is not None
            s.stop()


def test_a_switch_var_the_traffic_model_refuses_is_a_located_config_error():
    fabric = Fabric(switch_testbed())
    bad = fabric.testbed.devices["leaf1"].model_copy(update={"vars": {"pfcwd_detect_ms": -5}})
    with pytest.raises(ConfigError) as err:
        SwitchState(fabric, "leaf1", bad, lambda _port: None)
    assert any("devices.leaf1.vars.pfcwd_detect_ms" in p for p in err.value.problems)


def test_the_fabric_needs_its_traffic_model_it_does_not_warn_it_away():
    code = (
        "import sys; sys.modules['labtest.emulation.model.traffic'] = None\n"
        "from labtest.emulation.model.fabric import Fabric\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "labtest.emulation.model.traffic" in done.stderr
