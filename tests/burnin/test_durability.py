"""Burn-in against an unlucky operator: every storage fault is one line with exit 2, and the
station always ends safe (PRBS off, chamber in standby) with the run record closed.

Each test runs the command line on the emulated mini lab and keeps hold of the
emulated instruments (the chamber's SCPI model, the fabric's PRBS generators),
so "safe" is read from the instruments themselves after the run.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from burnin_helpers import MINI_TESTBED, station_variant

from labtest import exits, reservation
from labtest.burnin import cli, runner, store
from labtest.burnin.__main__ import main
from labtest.burnin.backends import open_store
from labtest.burnin.live import Status
from labtest.burnin.store import Event
from labtest.testbed import load_testbed


@dataclass
class Station:
    """What the runs opened: the emulated chamber and fabric, read after the run."""

    opened: list[Any] = field(default_factory=list)

    @property
    def touched(self) -> bool:
        return bool(self.opened)

    def safe(self) -> bool:
        assert self.opened, "no session was opened"
        for chamber, fabric in self.opened:
            if chamber.running or any(p is not None for p in fabric.modules.gen_pattern):
                return False
        return True

    def was_loaded(self) -> bool:
        """The run did get as far as putting the links under load."""
        counts = [f.counts for _, f in self.opened]
        return any(c.prbs_locked_s.any() or c.prbs_errors.any() for c in counts)


@pytest.fixture
def station(monkeypatch: pytest.MonkeyPatch) -> Station:
    seen = Station()
    original = runner.open_session

    def recording(*args: Any, **kwargs: Any) -> runner.Session:
        session = original(*args, **kwargs)
        emu = session.emulated
        seen.opened.append((emu.server("chamber1").served.scpi, emu.fabric))
        return session

    monkeypatch.setattr(runner, "open_session", recording)
    return seen


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def run_status(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [r[0] for r in con.execute("SELECT status FROM runs")]


ARGS = ["--emulate", "--plain", "--plots", "none"]


def test_a_corrupt_database_is_one_line_and_touches_nothing(tmp_path, station, capsys) -> None:
    db = tmp_path / "b.db"
    db.write_bytes(b"definitely not SQLite " * 400)
    db.chmod(0o600)
    assert main([str(station_variant(tmp_path)), *ARGS, "--db", str(db)]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"labtest burnin: {db}: the database is corrupt"), line
    assert not station.touched
    assert main(["--list", "--db", str(db)]) == 2
    assert "corrupt" in one_line(capsys.readouterr().err)


def test_a_locked_database_is_one_line_before_any_sample(
    tmp_path, station, capsys, monkeypatch
) -> None:
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.3)
    db = tmp_path / "b.db"
    open_store(db).close()
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds it
    try:
        assert main([str(station_variant(tmp_path)), *ARGS, "--db", str(db)]) == 2
    finally:
        other.execute("ROLLBACK")
        other.close()
    line = one_line(capsys.readouterr().err)
    assert "the database is locked by another process" in line, line
    assert not station.touched
    assert run_status(db) == []


@pytest.fixture
def mount_tmpfs(tmp_path: Path) -> Iterator[Any]:
    """Mount small tmpfs file systems under ``tmp_path`` (root only); unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def mount(name: str, options: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_read_only_db_or_output_is_found_before_the_first_sample(
    tmp_path, station, capsys, mount_tmpfs
) -> None:
    ro = mount_tmpfs("ro", "ro,size=1m")
    path = station_variant(tmp_path)
    assert main([str(path), *ARGS, "--db", str(ro / "b.db")]) == 2
    line = one_line(capsys.readouterr().err)
    assert str(ro / "b.db") in line and "Read-only file system" in line, line
    db = tmp_path / "b.db"
    assert main([str(path), *ARGS, "--db", str(db), "--output", str(ro / "out")]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"cannot write the results to {ro / 'out'}: Read-only file system" in line, line
    assert not station.touched
    assert not db.exists()  # the output is checked first: nothing was created


def test_a_full_disk_ends_safe_with_the_run_closed(tmp_path, station, capsys, mount_tmpfs):
    small = mount_tmpfs("small", "size=1m,mode=0700")
    db = small / "b.db"
    path = station_variant(tmp_path, duration_h=24)
    assert main([str(path), *ARGS, "--db", str(db), "--output", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    line = one_line(captured.err)
    assert f"labtest burnin: {db}: the disk is full" in line, line
    assert station.was_loaded() and station.safe()
    assert run_status(db) == ["stopped"]  # closed with the reserve's space: resumable
    assert not (small / "b.db-reserve").exists()


class Signals:
    """A progress sink that sends this process SIGTERM (``times`` times) after some readings."""

    def __init__(self, times: int, after: int = 15) -> None:
        self.times, self.after, self.sent = times, after, 0

    def update(self, status: Status) -> None:
        if status.readings_done >= self.after and self.sent < self.times:
            for _ in range(self.times):
                self.sent += 1
                os.kill(os.getpid(), signal.SIGTERM)

    def event(self, status: Status, event: Event) -> None:
        pass

    def close(self, status: Status) -> None:
        pass


@pytest.mark.parametrize("times", [1, 2], ids=["sigterm", "sigterm-twice"])
def test_sigterm_ends_safe_with_the_run_stopped(
    tmp_path, station, capsys, monkeypatch, times: int
) -> None:
    assert threading.current_thread() is threading.main_thread()  # signals land here
    monkeypatch.setattr(cli, "_progress", lambda plain: Signals(times))
    db = tmp_path / "b.db"
    path = station_variant(tmp_path, duration_h=12)
    assert main([str(path), *ARGS, "--db", str(db)]) == exits.INCOMPLETE  # stopped, resumable
    captured = capsys.readouterr()
    assert station.was_loaded() and station.safe()
    assert run_status(db) == ["stopped"]
    if times == 1:
        assert "continue with: labtest burnin --resume" in captured.out
    else:
        assert "interrupted; the run is saved as stopped" in captured.err


def test_a_device_held_elsewhere_makes_burnin_fail_fast_naming_the_holder(
    tmp_path, capsys, monkeypatch
) -> None:
    leases = tmp_path / "leases.db"
    keys = reservation.testbed_keys(load_testbed(MINI_TESTBED))
    opened: list[object] = []
    monkeypatch.setattr(runner, "open_session", lambda *a, **k: opened.append(a))
    path = station_variant(tmp_path)
    db = tmp_path / "b.db"
    with reservation.reserve(keys, store=reservation.open_store(str(leases)), run_id="pytest-run"):
        rc = main([str(path), "--no-emulate", "--plain", "--db", str(db),
                   "--lease-store", str(leases),
                   "--reserve-timeout", "0"])
    assert rc == 2
    line = one_line(capsys.readouterr().err)
    assert "devices busy" in line and "burnin-mini/sw1" in line, line
    assert f"pid {os.getpid()} (run pytest-run" in line, line
    assert opened == []  # not one device was touched
    assert run_status(db) == []


def test_burnin_waits_for_a_busy_device_then_runs(tmp_path, capsys) -> None:
    leases = str(tmp_path / "leases.db")
    keys = reservation.testbed_keys(load_testbed(MINI_TESTBED))
    held, done = threading.Event(), threading.Event()

    def other_run() -> None:  # reserve and release in one thread (file locks are per thread)
        with reservation.reserve(keys, store=reservation.open_store(leases), run_id="other"):
            held.set()
            done.wait(1.5)

    holder = threading.Thread(target=other_run)
    holder.start()
    try:
        assert held.wait(10)
        path = station_variant(tmp_path, duration_h=0.5, chamber=None,
                               monitors={"dom": {"period_s": 600}})
        rc = main([str(path), *ARGS, "--reserve", "--lease-store", leases,
                   "--reserve-timeout", "60", "--db", str(tmp_path / "b.db"),
                   "--output", str(tmp_path / "out")])
    finally:
        done.set()
        holder.join(10)
    err = capsys.readouterr().err
    assert "waiting up to 60 s: burnin-mini/" in err and "(run other, since" in err, err
    assert rc == 0, err
    assert run_status(tmp_path / "b.db") == ["complete"]


class TakeLeaseAway(Signals):
    """After some readings, remove this run's lease from the store (an expiry + takeover)."""

    def __init__(self, leases: Path) -> None:
        super().__init__(times=0)
        self.leases = leases

    def update(self, status: Status) -> None:
        if status.readings_done >= self.after:
            with sqlite3.connect(self.leases) as con:
                con.execute("DELETE FROM members")


def test_a_lost_lease_stops_the_run_safe_and_resumable(
    tmp_path, station, capsys, monkeypatch
) -> None:
    leases = tmp_path / "leases.db"
    monkeypatch.setattr(cli, "_progress", lambda plain: TakeLeaseAway(leases))
    db = tmp_path / "b.db"
    path = station_variant(tmp_path, duration_h=6)
    assert main([str(path), *ARGS, "--reserve", "--lease-store", str(leases),
                 "--db", str(db)]) == exits.INCOMPLETE
    captured = capsys.readouterr()
    assert "lease lost, stopping before touching the devices again" in captured.err
    assert "its lease was removed from the store" in captured.err
    assert station.was_loaded() and station.safe()
    assert run_status(db) == ["stopped"]
