"""Take a link down for a precise time: ``ip netns exec NS python3 outage.py IFACE DOWN_MS``.

Run as its own process, so its timing does not queue behind the traffic
generator's threads for the GIL. It waits for a line on stdin, sets the link
down and up again over rtnetlink (RTM_NEWLINK, no ``ip`` process in between),
and prints CLOCK_REALTIME instants in ns as JSON: before/after the down
request, before/after the up request, and ``running``: when the kernel
announced the link operational again. The link is down at once, but it
forwards again only once the kernel's link watcher (a worker thread) has
run after the carrier came back, which on a busy host can be milliseconds
after the up request returned: ``running - down_sent`` is the outage the
path really had.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
import time

RTM_NEWLINK = 16
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
IFF_UP = 0x1
IFF_RUNNING = 0x40  # operational: set by the link watcher, when the device forwards again
RTM_NEWLINK_GROUP = 0x1  # RTMGRP_LINK: link notifications
NLMSGHDR = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
IFINFOMSG = struct.Struct("=BxHiII")  # family, (pad), type, index, flags, change mask


def set_link(sock: socket.socket, index: int, up: bool, seq: int) -> None:
    body = IFINFOMSG.pack(socket.AF_UNSPEC, 0, index, IFF_UP if up else 0, IFF_UP)
    flags = NLM_F_REQUEST | NLM_F_ACK
    sock.send(NLMSGHDR.pack(NLMSGHDR.size + len(body), RTM_NEWLINK, flags, seq, 0) + body)


def wait_for(sock: socket.socket, index: int, seq: int, running: bool) -> tuple[int, int]:
    """Until our request is acknowledged and the link's RUNNING flag is ``running``.

    Returns when each was seen (ns).
    """
    acked = seen = 0
    while not (acked and seen):
        data, now = sock.recv(65536), time.time_ns()
        offset = 0
        while offset + NLMSGHDR.size <= len(data):
            length, kind, _, msg_seq, _ = NLMSGHDR.unpack_from(data, offset)
            if kind == NLMSG_ERROR and msg_seq == seq:
                (error,) = struct.unpack_from("=i", data, offset + NLMSGHDR.size)
                if error:
                    raise OSError(-error, "RTM_NEWLINK failed")
                acked = acked or now
            elif kind == RTM_NEWLINK:
                _, _, msg_index, flags, _ = IFINFOMSG.unpack_from(data, offset + NLMSGHDR.size)
                if msg_index == index and bool(flags & IFF_RUNNING) == running:
                    seen = seen or now
            offset += (length + 3) & ~3
    return acked, seen


def main() -> None:
    iface, down_ms = sys.argv[1], float(sys.argv[2])
    index = socket.if_nametoindex(iface)
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    sock.bind((0, RTM_NEWLINK_GROUP))
    sock.settimeout(2.0)
    with contextlib.suppress(OSError):  # wake on time even when the host is busy (root only)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
    print("ready", flush=True)
    if not sys.stdin.readline():
        return
    down_sent = time.time_ns()
    set_link(sock, index, False, 1)
    down_done, _ = wait_for(sock, index, 1, running=False)
    time.sleep(max(0.0, (down_sent + down_ms * 1e6 - time.time_ns()) / 1e9))
    up_sent = time.time_ns()
    set_link(sock, index, True, 2)
    up_done, running = wait_for(sock, index, 2, running=True)
    times = {"down_sent": down_sent, "down_done": down_done, "up_sent": up_sent}
    times |= {"up_done": up_done, "running": running}
    print(json.dumps(times), flush=True)


if __name__ == "__main__":
    main()
