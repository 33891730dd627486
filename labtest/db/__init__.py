"""Where labtest's shared records live: SQLite on one machine, PostgreSQL for a lab or a floor.

Three stores keep records that outlive a run: device **leases**
(:mod:`labtest.reservation`), **burn-in** samples (:mod:`labtest.burnin.store`)
and **run history** (:mod:`labtest.db.history`). Each has two backends behind
one interface: a SQLite file (the default; one host, no server) and PostgreSQL
(many runners and stations, one server the site's DBA runs).

One setting picks PostgreSQL for all three: ``LABTEST_DB=postgresql://user@host/db``
(``postgres://`` too, any libpq URL). A command's own option (``--lease-store``,
``--db``) still wins. Put passwords in ``~/.pgpass`` or ``$PGPASSWORD``, not in
the URL: URLs are printed in resume hints and errors with every password form masked
(:func:`display_url`), so a hint with a masked password cannot be pasted back.

Each store keeps its tables in its own PostgreSQL schema (``labtest_leases``,
``labtest_burnin``, ``labtest_history``), created on first use under an
advisory lock, so many processes may start at once against an empty database.
"""

from __future__ import annotations

import os
from typing import Any

from labtest import secrets
from labtest.errors import InfraError

ENV_DB = "LABTEST_DB"
PG_SCHEMES = ("postgresql://", "postgres://")
#: how long one statement may run, and a session may sit idle inside a transaction
#: (a frozen process then loses its transaction instead of blocking everybody)
STATEMENT_TIMEOUT_S = 30
IDLE_IN_TRANSACTION_S = 10
CONNECT_TIMEOUT_S = 10
#: pg_advisory_xact_lock key serialising schema creation ("labtest" in ASCII)
SCHEMA_LOCK = 0x6C6162746573


class DatabaseUnavailable(InfraError):
    """The database server cannot be reached or used (down, refused, no driver)."""


def env_url() -> str | None:
    """``$LABTEST_DB`` when set (a PostgreSQL URL or a SQLite path), else None."""
    return os.environ.get(ENV_DB) or None


def is_postgres(url: object) -> bool:
    return isinstance(url, str) and url.startswith(PG_SCHEMES)


def display_url(url: str) -> str:
    """The URL (or libpq connection string) without its password, for messages and resume
    hints: every form :func:`labtest.secrets.redact` masks (``user:PASSWORD@``,
    ``?password=``, ``sslpassword=``, ``password=X host=Y``). The password is registered
    too, so a driver error that echoes it is scrubbed wherever it is printed or logged."""
    secrets.register_credentials(url)
    return secrets.redact(url)


def connect(url: str, schema: str, ddl: str) -> Any:
    """An autocommit ``psycopg`` connection whose search path is ``schema``, created with ``ddl``.

    ``ddl`` (``CREATE ... IF NOT EXISTS`` statements) runs under a transaction-scoped
    advisory lock, so concurrent first users cannot race on the catalogue.
    """
    try:
        import psycopg
    except ImportError:
        raise DatabaseUnavailable(
            display_url(url), "PostgreSQL needs the psycopg driver: pip install 'labtest[postgres]'"
        ) from None
    try:
        conn = psycopg.connect(
            url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="labtest"
        )
    except psycopg.Error as exc:
        raise DatabaseUnavailable(display_url(url), f"cannot connect: {one_line(exc)}") from None
    try:
        conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT_S}s'")
        conn.execute(f"SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION_S}s'")
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            conn.execute(f"SET search_path TO {schema}")
            for statement in ddl.split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(f"SET search_path TO {schema}")
    except psycopg.Error as exc:
        conn.close()
        raise DatabaseUnavailable(display_url(url), f"cannot prepare {schema}: {one_line(exc)}") \
            from None
    return conn


def one_line(exc: BaseException) -> str:
    return secrets.redact(" ".join(str(exc).split())) or type(exc).__name__
