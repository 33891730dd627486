"""BGP and BFD sessions read from FRR's vtysh: shared by every switch whose routing is FRR
(a Linux + FRR box, SONiC's bgp container).

Each read is two commands: the vtysh JSON, then ``ip -j -4 addr show``, whose connected
subnets tell which local port each peer sits behind.
"""

from __future__ import annotations

from labtest.capabilities.routing import BfdSession, BgpSession
from labtest.drivers.common.cli import CliSwitch
from labtest.drivers.frr import parsers as p

ADDRESSES = "ip -j -4 addr show"


class FrrRouting(CliSwitch):
    """A CLI switch whose BGP and BFD run in FRR."""

    #: how vtysh is started on the box (SONiC: through sudo, into the bgp container)
    VTYSH = "vtysh"

    def _vtysh_with_addresses(self, show: str) -> str:
        answer = self.run(f"{self.VTYSH} -c '{show}'")
        return f"{answer}\n{p.ADDRESSES_MARK}\n{self.run(ADDRESSES)}"

    def bgp_sessions(self) -> dict[str, BgpSession]:
        text = self._vtysh_with_addresses("show bgp summary json")
        return self.parse(p.parse_bgp_sessions, "show bgp summary json", text)

    def bfd_sessions(self) -> dict[str, BfdSession]:
        text = self._vtysh_with_addresses("show bfd peers json")
        return self.parse(p.parse_bfd_sessions, "show bfd peers json", text)
