"""One ``--emulate`` rule for ``labtest run``, pytest, ``labtest doctor`` and ``labtest burnin``
(issue 38): the flag where given, else the testbed's ``emulation:`` section. Before, ``labtest
run`` emulated every testbed unless told not to (a real lab's file too: a green run of a
model of it), pytest and burn-in emulated none unless told to, and the doctor followed the
testbed."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest import runner_cli
from labtest.run import DEFAULT_TESTBED
from labtest.testbed import emulates, load_testbed

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "testbeds" / "example-lab.yaml"


@pytest.fixture(scope="module")
def emulated_file() -> object:
    return load_testbed(DEFAULT_TESTBED, check_drivers=False)


@pytest.fixture(scope="module")
def real_file() -> object:
    # a real lab's file: the example lab without the section that lets it be emulated
    return load_testbed(REAL, check_drivers=False).model_copy(update={"emulation": None})


def test_the_testbed_decides_unless_a_flag_says(emulated_file: object, real_file: object
                                                ) -> None:
    assert emulates(emulated_file, None) is True  # type: ignore[arg-type]
    assert emulates(real_file, None) is False  # type: ignore[arg-type]
    assert emulates(emulated_file, False) is False  # type: ignore[arg-type]
    assert emulates(real_file, True) is True  # type: ignore[arg-type]


def test_every_entry_point_leaves_the_default_to_the_rule() -> None:
    import argparse

    from labtest.burnin import cli as burnin_cli
    from labtest.doctor import cli as doctor_cli

    for module in (runner_cli, doctor_cli, burnin_cli):
        sub = argparse.ArgumentParser().add_subparsers()
        module.register(sub)
        for name, parser in sub.choices.items():
            flags = [a for a in parser._actions if a.dest == "emulate"]
            assert flags, name
            assert flags[0].default is None, f"{name}: --emulate defaults to {flags[0].default}"
            assert isinstance(flags[0], argparse.BooleanOptionalAction), name
