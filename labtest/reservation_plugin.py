"""The reservation's pytest side: one option group and one call before each test.

The core plugin (``labtest.plugin``) adds the options and calls ``before_test``; the
leases themselves (stores, expiry, waiting) are ``labtest.reservation``, which knows
nothing of pytest.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest

from labtest.errors import InfraError
from labtest.reservation import (
    DEFAULT_TTL_S,
    DEFAULT_WAIT_S,
    ENV_STORE,
    ENV_TTL,
    Holder,
    Lease,
    LeaseLost,
    StoreUnavailable,
    StoreUnusable,
    default_store_path,
    describe,
    open_store,
    reserve,
    testbed_keys,
)


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

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
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
        from labtest.plugin import testbed_of  # the plugin imports this module

        testbed = testbed_of(self.config)
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


def before_test(item: pytest.Item) -> None:
    """Reserve on the first test of this process, confirm the lease before every other.

    On a busy lab (after the wait) or a lost lease, the test errors as *broken*
    and the session stops after it, so no later test touches a device.
    """
    __tracebackhide__ = True  # a busy lab is one line, not a traceback
    config = item.config
    if not _enabled(config):
        return
    state = config.stash.get(_STASH, None)
    if state is None:
        state = config.stash[_STASH] = _RunReservation(config)
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
