"""The kernel backend of the emulated lab: real FRR, lldpd, net-snmp and OpenSSH in
network namespaces (``emulation: backend: kernel`` in a testbed). See docs/kernel-lab.md."""

from labtest.emulation.kernel.lab import KernelLab, KernelLabUnavailable
from labtest.emulation.kernel.prereq import why_not

__all__ = ["KernelLab", "KernelLabUnavailable", "why_not"]
