"""Accepting connections until told to stop, for the emulators' TCP listeners."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

#: How long an emulator's start() waits for its serving thread. A liveness bound, not a
#: measurement: on a loaded 2-core runner a new thread waited more than 5 s for its first
#: turn (CI, 2026-12-07). The socket is bound before the wait, so clients queue, not fail.
START_TIMEOUT_S = 120.0


def accepted(listener: socket.socket, stop: threading.Event) -> Iterator[socket.socket]:
    """Each client ``listener`` accepts, until ``stop`` is set or the listener is closed.

    The listener needs a timeout (``settimeout``): each one that passes looks at ``stop``
    again, so a stop is seen without a connection to wake the loop.
    """
    while not stop.is_set():
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            return  # closed by the owner's stop()
        yield client
