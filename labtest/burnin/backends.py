"""Which store keeps a run's samples: a SQLite file or a PostgreSQL server.

:func:`open_store` opens :class:`~labtest.burnin.store.SqliteStore` for a path and
:class:`~labtest.burnin.postgres.PgSampleStore` for a ``postgresql://`` URL;
:func:`database` says where a run's samples go when nothing is given. Both stores are
written against :mod:`labtest.burnin.store` alone (records, schema, shared SQL).
"""

from __future__ import annotations

from pathlib import Path

from labtest import db
from labtest.burnin.postgres import PgSampleStore
from labtest.burnin.store import SampleStore, SqliteStore


def open_store(path: str | Path, synchronous: str = "full", create: bool = True) -> SampleStore:
    """The store for ``path``: a SQLite file, or a ``postgresql://`` URL (a server shared by
    many stations); ``create=False``: it must exist (a file) or hold runs (a server)."""
    if db.is_postgres(str(path)):
        return PgSampleStore(str(path), create=create)
    return SqliteStore(path, synchronous, create)


def database(given: str | Path | None, station_url: str | None = None,
             station_path: Path | None = None) -> str | Path:
    """Where a run's samples go: ``--db``, the station's ``storage.url``, a PostgreSQL
    ``$LABTEST_DB``, the station's ``storage.path``, else ``reports/burnin/burnin.db``."""
    env = db.env_url()
    return (given or station_url or (env if db.is_postgres(env) else None) or station_path
            or DEFAULT_DB)


#: the SQLite file when nothing else is said (relative to where the command runs)
DEFAULT_DB = Path("reports/burnin/burnin.db")

