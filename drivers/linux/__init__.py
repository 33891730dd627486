"""Linux host driver family: RDMA NICs, perftest, nccl-tests, ethtool, iproute2.

``labtest.drivers.linux.parsers`` turns the tools' text into the records of
``labtest.capabilities.host``; the SSH-backed driver builds on them.
"""
