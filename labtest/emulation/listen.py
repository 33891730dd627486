"""Accepting connections until told to stop, for the emulators' TCP listeners."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator


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
