"""The one way labtest closes an asyncio loop it ran in a thread of its own.

pysnmp's client (labtest.transports.snmp) and the emulated SNMP agent each run a loop
in a thread. Closing one with tasks still pending leaks them ("Task was destroyed but
it is pending") and leaves getaddrinfo's executor thread behind; this cancels the
tasks, lets them finish, shuts the default executor down, then closes the loop.
"""

from __future__ import annotations

import asyncio


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close a loop that has stopped running (``run_forever`` returned)."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_default_executor())  # getaddrinfo's thread
    loop.close()
