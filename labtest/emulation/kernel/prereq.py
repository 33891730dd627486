"""Can this machine build a kernel lab? Root, and the real software, from Debian packages."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: program -> the Debian package that ships it
PROGRAMS: dict[str, str] = {
    "/usr/lib/frr/zebra": "frr",
    "/usr/lib/frr/bgpd": "frr",
    "/usr/lib/frr/bfdd": "frr",
    "/usr/bin/vtysh": "frr",
    "/usr/sbin/lldpd": "lldpd",
    "/usr/sbin/lldpcli": "lldpd",
    "/usr/sbin/snmpd": "snmpd",
    "/usr/bin/snmpget": "snmp",
    "/usr/sbin/sshd": "openssh-server",
    "/usr/bin/ssh-keygen": "openssh-client",
    "ip": "iproute2",
    "tc": "iproute2",
    "nft": "nftables",
    "ethtool": "ethtool",
    "iperf3": "iperf3",  # the hosts' UdpStreams (paths member loads, host-carried failover)
    "traceroute": "traceroute",  # the hosts' UdpTraces (the doctor's path probes)
}
#: one line for a CI script or a lab engineer
INSTALL = "apt-get install -y --no-install-recommends " + " ".join(sorted(set(PROGRAMS.values())))


def _present(program: str) -> bool:
    return Path(program).is_file() if program.startswith("/") else shutil.which(program) is not None


def missing_packages() -> list[str]:
    return sorted({pkg for prog, pkg in PROGRAMS.items() if not _present(prog)})


def why_not() -> str | None:
    """None when a kernel lab can be built here, else the reason with what to do."""
    problems = []
    if os.geteuid() != 0:
        problems.append("needs root (network namespaces, veth, daemons)")
    missing = missing_packages()
    if missing:
        problems.append(f"missing Debian packages: {' '.join(missing)} ({INSTALL})")
    return "; ".join(problems) if problems else None
