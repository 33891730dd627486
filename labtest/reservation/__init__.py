"""Reserving a testbed's devices for one run, so two runs never drive one device.

The parts, low to high: ``store`` (who holds what, the errors, the ``LeaseStore``
Protocol, member lock files: what every store shares), ``sqlite`` (the default store, one
SQLite file), ``postgres`` (a PostgreSQL store for many hosts), ``leases`` (a run's lease:
taken, renewed by a heartbeat, waited for, released; ``open_store`` picks the store) and
``plugin`` (the pytest side: options and the check before each test). This package names
the library's parts for callers; it imports no pytest (the plugin is imported by
``labtest.plugin`` alone). ``docs/reservation.md`` explains the design.
"""

from labtest.reservation.leases import (
    STORES,
    Lease,
    open_store,
    reserve,
)
from labtest.reservation.sqlite import (
    SqliteLeaseStore,
)
from labtest.reservation.store import (
    BUSY_TIMEOUT_S,
    DEFAULT_TTL_S,
    DEFAULT_WAIT_S,
    ENV_STORE,
    ENV_TTL,
    MEMBER_ID,
    POLL_S,
    SAFETY,
    DevicesBusy,
    Holder,
    LeaseLost,
    LeaseRow,
    LeaseStore,
    Member,
    StoreUnavailable,
    StoreUnusable,
    default_store_path,
    describe,
    device_key,
    lock_abandoned,
    member_lock_path,
    permission_hint,
    shared_dir,
    testbed_keys,
)

__all__ = [
    "BUSY_TIMEOUT_S",
    "DEFAULT_TTL_S",
    "DEFAULT_WAIT_S",
    "ENV_STORE",
    "ENV_TTL",
    "MEMBER_ID",
    "POLL_S",
    "SAFETY",
    "STORES",
    "DevicesBusy",
    "Holder",
    "Lease",
    "LeaseLost",
    "LeaseRow",
    "LeaseStore",
    "Member",
    "SqliteLeaseStore",
    "StoreUnavailable",
    "StoreUnusable",
    "default_store_path",
    "describe",
    "device_key",
    "lock_abandoned",
    "member_lock_path",
    "open_store",
    "permission_hint",
    "reserve",
    "shared_dir",
    "testbed_keys",
]
