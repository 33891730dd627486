"""Testbed files: the typed description of a lab."""

from labtest.testbed.loader import load_testbed
from labtest.testbed.model import Device, Endpoint, Link, Testbed

__all__ = ["Device", "Endpoint", "Link", "Testbed", "emulates", "load_testbed"]


def emulates(testbed: Testbed, flag: bool | None) -> bool:
    """The one ``--emulate`` rule of ``labtest run``, pytest, ``labtest doctor`` and
    ``labtest burnin``: the flag where given (``--emulate`` / ``--no-emulate``), else the
    testbed's own word: its ``emulation:`` section. A real lab's file is never emulated
    by default (a green run of a model of it proves nothing of the lab)."""
    return testbed.emulation is not None if flag is None else flag
