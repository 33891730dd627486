"""``labtest lease list|release``: who holds which devices, across every runner of a store.

    labtest lease list [--store URL]          # device, holder (user@host pid), run, since, expires
    labtest lease release RUN_ID [--store URL]

The store is the one pytest and burn-in use (``--lease-store``, ``$LABTEST_LEASE_STORE``,
a PostgreSQL ``$LABTEST_DB``, else this host's SQLite file). ``release`` takes a run's
devices away at once; the holder finds out at its next renewal and stops before touching
a device again (``LeaseLost``). Exit status: 0 done, 1 no such run, 2 the store is unusable.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from labtest.reservation import LeaseRow

T = TypeVar("T")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ap = subparsers.add_parser(
        "lease", help="list the device leases of every runner, or release a run's devices",
        description="Show or release device leases (docs/reservation.md, docs/database.md).")
    sub = ap.add_subparsers(dest="lease_cmd", required=True, metavar="ACTION")
    lst = sub.add_parser("list", help="held devices: holder, run, since, expires")
    rel = sub.add_parser("release", help="take a run's devices away (its holder stops)")
    rel.add_argument("run_id", metavar="RUN_ID")
    for p in (lst, rel):
        p.add_argument("--store", metavar="URL", help="a SQLite path or postgresql:// URL "
                       "(default: as pytest's --lease-store)")
    lst.set_defaults(handler=_list)
    rel.set_defaults(handler=_release)


class _Listing(Protocol):
    """What the two actions ask of a store (the SQLite and PostgreSQL stores answer it; a
    plug-in store need not)."""

    def leases(self) -> list[LeaseRow]: ...

    def release_run(self, run_id: str) -> int: ...


def _open(args: argparse.Namespace) -> _Listing:
    from labtest.reservation import open_store

    store = open_store(args.store)
    if not hasattr(store, "leases"):
        raise LookupError(f"{store!r} cannot list its leases")
    return cast("_Listing", store)


def _close(store: _Listing) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        close()


def _when(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s).isoformat(sep=" ", timespec="seconds")


def _ask(args: argparse.Namespace, question: Callable[[_Listing], T]) -> T | None:
    """The store's answer to one question, the store closed after; None (said in one line on
    stderr) when the store is unusable: both actions' exit status 2."""
    from labtest.errors import InfraError

    try:
        store = _open(args)
        try:
            return question(store)
        finally:
            _close(store)
    except (InfraError, LookupError, ValueError) as exc:
        print(f"labtest lease: {exc}", file=sys.stderr)
        return None


def _list(args: argparse.Namespace) -> int:
    rows = _ask(args, lambda store: store.leases())
    if rows is None:
        return 2
    if not rows:
        print("no device is held")
        return 0
    now = time.time()
    table = [("DEVICE", "HOLDER", "RUN", "SINCE", "EXPIRES")]
    for r in rows:
        left = r.expires_s - now
        table.append((r.label, f"{r.user}@{r.host} pid {r.pid}", r.run_id, _when(r.since_s),
                      f"{_when(r.expires_s)} (in {left:.0f} s)"))
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[4])
    return 0


def _release(args: argparse.Namespace) -> int:
    freed = _ask(args, lambda store: store.release_run(args.run_id))
    if freed is None:
        return 2
    if not freed:
        print(f"labtest lease: run {args.run_id} holds no device", file=sys.stderr)
        return 1
    print(f"released {freed} device(s) of run {args.run_id}; its holder stops at its next "
          "renewal")
    return 0
