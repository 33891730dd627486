"""Which port a routing peer sits behind: the one whose connected subnet holds it.

BGP summaries (EOS, NX-OS, FRR) key a session by the peer's address, not by a port; the
routing suite judges per fabric link, so each driver reads its ports' addresses and asks
here. Two ports holding the peer (a misconfiguration) or none name no port: ``None``,
never a guess.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping


def port_of(peer: str,
            addresses: Mapping[str, Iterable[str | ipaddress.IPv4Interface
                                          | ipaddress.IPv6Interface]]) -> str | None:
    """The one port whose connected subnet holds ``peer`` (none, or two: ``None``);
    ``addresses``: port -> its interface addresses (``10.0.0.1/31``), the port's own
    address excluded as a peer."""
    try:
        ip = ipaddress.ip_address(peer)
    except ValueError:
        return None
    hits = [
        port
        for port, nets in addresses.items()
        for n in map(ipaddress.ip_interface, nets)
        if ip.version == n.version and ip in n.network and ip != n.ip
    ]
    return hits[0] if len(hits) == 1 else None
