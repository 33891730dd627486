"""One real PostgreSQL server for every database test (Debian package ``postgresql``).

The server runs from a temp dir on 127.0.0.1 and a private port (``labtest.db.pgserver``),
as the ``postgres`` user when the tests run as root; it is stopped by its PID and its
directory removed at the end of the session. Without the package (or without a user
to run it as) the PostgreSQL tests skip, naming the package; the SQLite half still runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from labtest.db import pgserver

_names = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pgserver.LocalServer]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("PostgreSQL tests need psycopg: pip install 'labtest[postgres]'")
    try:
        server = pgserver.LocalServer().start()
    except pgserver.ServerUnavailable as exc:
        pytest.skip(f"no PostgreSQL server (Debian package {pgserver.PACKAGE}): {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: pgserver.LocalServer) -> str:
    """A fresh, empty database on the session's server, for one test."""
    return pg_server.new_database(f"t{next(_names)}")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path) -> str:
    """Where a store lives: a SQLite file, or a PostgreSQL URL (the same tests run on both)."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return str(request.getfixturevalue("pg_url"))
