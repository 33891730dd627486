"""Parsers for Linux host tools, registered for ``labtest parse linux "COMMAND" FILE``.

Importing this package registers every parser; each module covers one tool family.
"""

from labtest.drivers.linux.parsers import (
    ethtool,
    iperf,
    iproute,
    nccl,
    pcie,
    perftest,
    rdma,
    traceroute,
)

__all__ = ["ethtool", "iperf", "iproute", "nccl", "pcie", "perftest", "rdma", "traceroute"]
