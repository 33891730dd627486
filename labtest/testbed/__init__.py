"""Testbed files: the typed description of a lab."""

from labtest.testbed.loader import load_testbed
from labtest.testbed.model import Device, Endpoint, Link, Testbed

__all__ = ["Device", "Endpoint", "Link", "Testbed", "load_testbed"]
