"""Manufacturing burn-in: long runs with monitors, durable samples, resume, verdict per serial.

Python API (what ``labtest burnin`` does)::

    from labtest.burnin import Options, analyse, load_station, open_store, start
    from labtest.measure import load_limits
    station = load_station("stations/emulated-leafspine.yaml")
    outcome = start(station, Options(emulate=True))        # or resume(run_id, Options())
    store = open_store(outcome.db)
    report = analyse(store, outcome.run_id, load_limits(station.limits))
"""

from labtest.burnin.analysis import Report, analyse
from labtest.burnin.backends import open_store
from labtest.burnin.runner import Options, Outcome, RunError, resume, start
from labtest.burnin.station import Station, load_station
from labtest.burnin.store import SampleStore, SqliteStore

__all__ = [
    "Options",
    "Outcome",
    "Report",
    "RunError",
    "SampleStore",
    "SqliteStore",
    "Station",
    "analyse",
    "load_station",
    "open_store",
    "resume",
    "start",
]
