"""``pgserver.database``: a given URL passes through; else a private server lives for the block."""

from __future__ import annotations

import pytest

from labtest.db import pgserver


def test_given_url_is_used_as_is() -> None:
    with pgserver.database("postgresql://someone@db.example/labtest") as url:
        assert url == "postgresql://someone@db.example/labtest"


def test_private_server_answers_in_the_block_and_is_gone_after() -> None:
    psycopg = pytest.importorskip("psycopg")
    if pgserver.binaries() is None:
        pytest.skip(f"no PostgreSQL server (Debian package {pgserver.PACKAGE})")
    with pgserver.database(None, fsync=False) as url, psycopg.connect(url) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=5)
