"""Management access from the test process into a namespace, without touching the host.

A device's sshd and snmpd listen on the loopback of its own namespace, so no
interface or route is added to the host's namespace. A forwarder listens on an
ephemeral 127.0.0.1 port of the host and, for every client, opens a socket
*inside* the namespace (a socket keeps the namespace it was created in) to
the daemon. When the daemon is stopped, the client sees what it would see on a
real device whose management plane is down: a refused or unanswered request.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading

from labtest import netns as ns
from labtest.emulation.listen import accepted

POLL_S = 0.2  # how often the loops look at the stop flag
CONNECT_TIMEOUT_S = 5.0


class TcpForwarder:
    """127.0.0.1:<port> on the host -> 127.0.0.1:<target_port> inside ``netns``."""

    def __init__(self, netns: str, target_port: int) -> None:
        self.netns = netns
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(POLL_S)
        self.port: int = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._main = threading.Thread(target=self._accept, name=f"fwd-{netns}", daemon=True)

    def start(self) -> TcpForwarder:
        self._main.start()
        return self

    def _accept(self) -> None:
        for client in accepted(self._listener, self._stop):
            t = threading.Thread(target=self._serve, args=(client,), daemon=True)
            with self._lock:
                self._threads = [x for x in self._threads if x.is_alive()] + [t]
            t.start()

    def _serve(self, client: socket.socket) -> None:
        def open_inner() -> socket.socket:
            return socket.create_connection(("127.0.0.1", self.target_port), CONNECT_TIMEOUT_S)

        try:
            inner = ns.call_in_netns(self.netns, open_inner, timeout_s=CONNECT_TIMEOUT_S + 1)
        except (OSError, ns.NetnsError):
            client.close()  # the daemon is down: the client sees the connection closed
            return
        for s in (client, inner):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(None)
        with self._lock:
            self._socks |= {client, inner}
        back = threading.Thread(target=_pump, args=(inner, client), daemon=True)
        back.start()
        _pump(client, inner)
        back.join(CONNECT_TIMEOUT_S)
        with self._lock:
            self._socks -= {client, inner}
        for s in (client, inner):
            s.close()

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            socks, threads = list(self._socks), list(self._threads)
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        self._main.join(2 * POLL_S + 1)
        for t in threads:
            t.join(2.0)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


class UdpForwarder:
    """UDP 127.0.0.1:<port> on the host -> 127.0.0.1:<target_port> inside ``netns``.

    One inner socket per client address, so each answer goes back to its asker.
    """

    def __init__(self, netns: str, target_port: int) -> None:
        self.netns = netns
        self.target_port = target_port
        self._outer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._outer.bind(("127.0.0.1", 0))
        self.port: int = self._outer.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"udp-{netns}", daemon=True)

    def start(self) -> UdpForwarder:
        self._thread.start()
        return self

    def _inner(self) -> socket.socket:
        def make() -> socket.socket:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.connect(("127.0.0.1", self.target_port))
            return s

        return ns.call_in_netns(self.netns, make, timeout_s=CONNECT_TIMEOUT_S)

    def _loop(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._outer, selectors.EVENT_READ, None)
        clients: dict[tuple[str, int], socket.socket] = {}
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(POLL_S):
                    if key.data is None:
                        data, addr = self._outer.recvfrom(65536)
                        inner = clients.get(addr)
                        if inner is None:
                            inner = clients[addr] = self._inner()
                            sel.register(inner, selectors.EVENT_READ, addr)
                        with contextlib.suppress(OSError):
                            inner.send(data)
                    else:
                        with contextlib.suppress(OSError):
                            self._outer.sendto(key.fileobj.recv(65536), key.data)  # type: ignore[union-attr]
        finally:
            for s in clients.values():
                s.close()
            sel.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2 * POLL_S + 1)
        self._outer.close()
