"""The reservation's pytest side: one option group and one call before each test.

The core plugin (``labtest.plugin``) adds the options and calls ``before_test`` with a
way to read the session's testbed; the leases themselves (stores, expiry, waiting) are
``labtest.reservation.leases``, which knows nothing of pytest. This module imports
nothing of the core plugin: the testbed comes in as a callable.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

import pytest

from labtest.errors import InfraError
from labtest.reservation.leases import Lease, open_store, reserve
from labtest.reservation.store import (
    DEFAULT_TTL_S,
    DEFAULT_WAIT_S,
    ENV_STORE,
    ENV_TTL,
    Holder,
    LeaseLost,
    StoreUnavailable,
    StoreUnusable,
    default_store_path,
    describe,
    testbed_keys,
)
from labtest.testbed.model import Testbed

#: the session's testbed, as the core plugin reads it (None: no --testbed)
TestbedOf = Callable[[pytest.Config], Testbed | None]


def add_options(group: Any) -> None:
    """The reservation options, added to the plugin's ``labtest`` option group."""
    group.addoption(
        "--reserve",
        action="store_true",
        default=None,
        help="reserve the testbed's devices for this run (default: on, off with --emulate)",
    )
    group.addoption("--no-reserve", action="store_false", dest="reserve", help="do not reserve")
    group.addoption(
        "--reserve-timeout",
        type=float,
        default=DEFAULT_WAIT_S,
        metavar="SECONDS",
        help=f"wait this long for busy devices; 0 fails fast (default {DEFAULT_WAIT_S:g})",
    )
    group.addoption(
        "--lease-store",
        metavar="URL",
        help=f"where leases live, shared by every runner of the lab: a SQLite file path or a "
        f"postgresql:// URL (default ${ENV_STORE}, a postgresql:// $LABTEST_DB, or "
        f"{default_store_path()})",
    )


class _RunReservation:
    """This process's reservation: taken before its first test, checked before each."""

    def __init__(self, config: pytest.Config, testbed_of: TestbedOf) -> None:
        self.config = config
        self.testbed_of = testbed_of
        self.lease: Lease | None = None
        self.error: InfraError | None = None

    def check(self) -> None:
        __tracebackhide__ = True  # a busy lab is one line, not a traceback
        if self.error is not None:
            raise self.error
        try:
            if self.lease is None:
                self.lease = self._reserve()
            else:
                self.lease.confirm()
        except InfraError as exc:
            self.error = exc  # every later test fails the same way, without waiting again
            raise

    def _reserve(self) -> Lease:
        __tracebackhide__ = True  # a busy lab is one line, not a traceback
        testbed = self.testbed_of(self.config)
        if testbed is None:
            raise LeaseLost("testbed", "cannot reserve: no --testbed")
        workerinput = getattr(self.config, "workerinput", None)
        run_id = workerinput["testrunuid"] if workerinput else None
        store = open_store(self.config.getoption("lease_store"))
        try:
            return reserve(
                testbed_keys(testbed),
                store=store,
                run_id=run_id,
                ttl_s=float(os.environ.get(ENV_TTL, DEFAULT_TTL_S)),
                wait_s=self.config.getoption("reserve_timeout"),
                on_wait=self._say_waiting,
            )
        except BaseException:
            close = getattr(store, "close", None)  # a server store's connection
            if close is not None:
                with contextlib.suppress(StoreUnavailable, OSError):
                    close()
            raise

    def _say_waiting(self, blockers: dict[str, Holder]) -> None:
        wait_s = self.config.getoption("reserve_timeout")
        _say(self.config, f"labtest: waiting up to {wait_s:g} s: {describe(blockers)}")

    def release(self) -> None:
        if self.lease is not None:
            self.lease.release()
            close = getattr(self.lease.store, "close", None)  # a server store's connection
            if close is not None:
                with contextlib.suppress(StoreUnavailable, OSError):
                    close()
            self.lease = None


def _say(config: pytest.Config, line: str) -> None:
    """Print past pytest's output capture (setup output is otherwise held back)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if capture is None or reporter is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


_STASH = pytest.StashKey[_RunReservation]()


def before_test(item: pytest.Item, testbed_of: TestbedOf) -> None:
    """Reserve on the first test of this process, confirm the lease before every other.

    ``testbed_of(config)`` reads the session's testbed (the core plugin's), once, when
    the first test reserves.

    On a busy lab (after the wait) or a lost lease, the test errors as *broken*
    and the session stops after it, so no later test touches a device.
    """
    __tracebackhide__ = True  # a busy lab is one line, not a traceback
    config = item.config
    if not _enabled(config):
        return
    state = config.stash.get(_STASH, None)
    if state is None:
        state = config.stash[_STASH] = _RunReservation(config, testbed_of)
        config.add_cleanup(state.release)
    try:
        state.check()
    except StoreUnusable as exc:  # corrupt or unsafe: one clear error, not one per test
        pytest.exit(f"labtest: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    except InfraError as exc:
        item.session.shouldstop = f"labtest: {exc}"
        raise


def _enabled(config: pytest.Config) -> bool:
    wanted = config.getoption("reserve", None)
    if wanted is None:  # default: real labs yes, an emulated lab is this run's own
        wanted = not config.getoption("emulate", False)
    return bool(wanted) and config.getoption("testbed", None) is not None
