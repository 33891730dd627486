"""Take a link down for a precise time: ``ip netns exec NS python3 outage.py IFACE DOWN_MS``.

Run as its own process, so its timing does not queue behind the traffic
generator's threads for the GIL. It waits for a line on stdin, sets the link
down and up again over rtnetlink (RTM_NEWLINK, no ``ip`` process in between),
and prints the four CLOCK_REALTIME instants in ns as JSON: before/after the
down request and before/after the up request. The outage the path saw lies
between ``up_sent - down_done`` and ``up_done - down_sent``.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time

RTM_NEWLINK = 16
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
IFF_UP = 0x1
NLMSGHDR = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
IFINFOMSG = struct.Struct("=BxHiII")  # family, (pad), type, index, flags, change mask


def set_link(sock: socket.socket, index: int, up: bool, seq: int) -> None:
    body = IFINFOMSG.pack(socket.AF_UNSPEC, 0, index, IFF_UP if up else 0, IFF_UP)
    header = NLMSGHDR.pack(
        NLMSGHDR.size + len(body), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, seq, 0
    )
    sock.send(header + body)
    reply = sock.recv(4096)
    kind = NLMSGHDR.unpack_from(reply)[1]
    (error,) = struct.unpack_from("=i", reply, NLMSGHDR.size)
    if kind != NLMSG_ERROR or error != 0:
        raise OSError(-error, f"RTM_NEWLINK up={up} failed")


def main() -> None:
    iface, down_ms = sys.argv[1], float(sys.argv[2])
    index = socket.if_nametoindex(iface)
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    sock.settimeout(2.0)
    print("ready", flush=True)
    if not sys.stdin.readline():
        return
    down_sent = time.time_ns()
    set_link(sock, index, False, 1)
    down_done = time.time_ns()
    time.sleep(max(0.0, (down_sent + down_ms * 1e6 - time.time_ns()) / 1e9))
    up_sent = time.time_ns()
    set_link(sock, index, True, 2)
    up_done = time.time_ns()
    times = {"down_sent": down_sent, "down_done": down_done, "up_sent": up_sent, "up_done": up_done}
    print(json.dumps(times), flush=True)


if __name__ == "__main__":
    main()
