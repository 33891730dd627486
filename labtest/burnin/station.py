"""The station file: what a burn-in station runs, for how long, against which limits.

A station names a testbed (the lab), the units under test (devices whose
serials come from inventory, plus the optics in their cabled ports), the load,
an optional thermal-chamber profile, the monitors and their sample periods,
the duration and the limits profile. It is read through ``labtest.yamlsource``,
so every mistake is reported at once as ``file:line:column: field: problem``,
like a testbed file.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr

from labtest.burnin.profile import Chamber, Strict, profile_duration_s
from labtest.errors import ConfigError
from labtest.yamlsource import Loc, Source, read, validate

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
LOCATION = re.compile(r"^(?P<device>[A-Za-z0-9][A-Za-z0-9_.\-]*)(?::(?P<port>\S+))?$")
PATH_KEYS = frozenset({"testbed", "limits", "path", "output"})

#: limit keys the analysis judges against; a profile missing one is refused at load time
REQUIRED_LIMITS = (
    "burnin.temperature_c",
    "burnin.voltage_v",
    "burnin.tx_power_dbm",
    "burnin.rx_power_dbm",
    "burnin.tx_power_drift_db",
    "burnin.rx_power_drift_db",
    "burnin.tx_bias_drift_pct",
    "burnin.temperature_drift_c",
    "burnin.fec_uncorrectable_cw",
    "burnin.pre_fec_ber",
    "burnin.fec_tail_bin",
    "burnin.prbs_ber",
    "burnin.prbs_lock_losses",
    "burnin.link_flaps",
    "burnin.error_counter_increments",
    "burnin.dom_alarms",
    "burnin.sample_coverage_pct",
)




# --- units -----------------------------------------------------------------------


class Units(Strict):
    """Devices under test; their serials (and their optics' serials) come from inventory."""

    devices: list[str] = Field(min_length=1)
    optics: Literal["all", "none"] | list[str] = Field(
        "all", description="modules under test: every cabled port, none, or 'device:port' list"
    )
    serials: dict[str, str] = Field(
        default_factory=dict,
        description="'device' or 'device:port' -> serial scanned/entered by the operator; "
        "checked against inventory, used where inventory has none",
    )


# --- load ----------------------------------------------------------------------------


class PrbsLoad(Strict):
    """PRBS on every lane of every link whose two ends can run it; other links stay in
    mission mode (idle frames, FEC counted)."""

    kind: Literal["prbs"]
    pattern: str = Field("PRBS31Q", pattern=r"^[A-Za-z0-9]+$")


class NoLoad(Strict):
    """Links in mission mode: what the units carry is whatever the lab sends (soak)."""

    kind: Literal["none"]


Load = Annotated[PrbsLoad | NoLoad, Field(discriminator="kind")]


# --- monitors and storage -------------------------------------------------------------------


class Monitor(Strict):
    period_s: float = Field(gt=0)


class FecMonitor(Monitor):
    histogram: bool = Field(True, description="also read the per-bin histogram (FEC tail)")


class Monitors(Strict):
    dom: Monitor | None = Monitor(period_s=300)
    fec: FecMonitor | None = FecMonitor(period_s=300)
    counters: Monitor | None = Monitor(period_s=300)
    prbs: Monitor | None = None
    chamber: Monitor | None = None

    def enabled(self) -> dict[str, Monitor]:
        names = ("dom", "fec", "counters", "prbs", "chamber")
        return {n: m for n in names if (m := getattr(self, n)) is not None}


class Storage(Strict):
    path: Path | None = Field(None, description="SQLite file; default reports/burnin/burnin.db")
    url: str | None = Field(
        None, pattern=r"^postgres(ql)?://",
        description="a PostgreSQL database shared by the floor (wins over path and $LABTEST_DB)")
    synchronous: Literal["full", "normal"] = Field(
        "full", description="full: fsync every reading (survives a power cut); normal: a crash"
    )


class Station(Strict):
    station: str = Field(pattern=NAME)
    description: str = ""
    testbed: Path
    limits: Path
    duration_h: float = Field(gt=0)
    units: Units
    load: Load = NoLoad(kind="none")
    chamber: Chamber | None = None
    monitors: Monitors = Monitors()
    storage: Storage = Storage()
    output: Path | None = Field(None, description="results directory; default reports/burnin")

    _source: Path | None = PrivateAttr(None)
    _sha256: str = PrivateAttr("")

    @property
    def source(self) -> Path | None:
        return self._source

    @property
    def sha256(self) -> str:
        return self._sha256

    @property
    def duration_s(self) -> float:
        return self.duration_h * 3600.0


def load_station(path: str | Path) -> Station:
    """Return the validated station or raise ``ConfigError`` listing every problem."""
    path = Path(path)
    src = read(path)
    _resolve_paths(src.data, src)
    station = validate(src, Station)
    _check_references(src.data, src)
    src.raise_if_problems()
    assert station is not None
    station._source = path
    station._sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    return station


def _resolve_paths(node: Any, src: Source) -> None:
    """File paths in a station are relative to the station file."""
    if isinstance(node, list):
        for item in node:
            _resolve_paths(item, src)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in PATH_KEYS and isinstance(value, str) and value:
            p = Path(value).expanduser()
            node[key] = str(p if p.is_absolute() else (src.path.parent / p))
        else:
            _resolve_paths(value, src)


def _mapping(value: Any) -> dict[str, Any]:
    """A YAML mapping, or empty when the file has something else there (reported elsewhere)."""
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _check_references(data: Any, src: Source) -> None:
    """Cross-checks against the testbed and the limits profile, on the raw data."""
    if not isinstance(data, dict):
        return
    testbed = _testbed(data.get("testbed"), src)
    _check_limits(data.get("limits"), src)
    units = _mapping(data.get("units"))
    devices = _items(units.get("devices"))
    if testbed is not None:
        _check_units(units, devices, testbed, src)
        _check_chamber(data.get("chamber"), testbed, src)
    _check_durations(data, src)
    monitors = _mapping(data.get("monitors"))
    load = _mapping(data.get("load"))
    if monitors.get("prbs") is not None and load.get("kind") != "prbs":
        src.problem(("monitors", "prbs"), "the prbs monitor needs 'load: {kind: prbs}'")
    if monitors.get("chamber") is not None and not data.get("chamber"):
        src.problem(("monitors", "chamber"), "the chamber monitor needs a 'chamber:' section")


def _testbed(value: Any, src: Source) -> Any:
    from labtest.testbed import load_testbed

    if not isinstance(value, str):
        return None
    try:
        return load_testbed(value)
    except ConfigError as exc:
        src.problem(("testbed",), f"testbed {value} has {len(exc.problems)} error(s):")
        src.problems.extend(f"    {p}" for p in exc.problems)
        return None


def _check_limits(value: Any, src: Source) -> None:
    from labtest.measure import load_limits

    if not isinstance(value, str):
        return
    try:
        profile = load_limits(value)
    except ConfigError as exc:
        src.problem(("limits",), f"limits profile {value} has {len(exc.problems)} error(s):")
        src.problems.extend(f"    {p}" for p in exc.problems)
        return
    missing = [k for k in REQUIRED_LIMITS if k not in profile.limits]
    if missing:
        src.problem(("limits",), f"limits profile {value} lacks {', '.join(missing)}")


def _check_units(units: dict[str, Any], devices: list[Any], testbed: Any, src: Source) -> None:
    known = ", ".join(sorted(testbed.devices))
    seen: set[str] = set()
    for i, name in enumerate(devices):
        if name not in testbed.devices:
            src.problem(("units", "devices", i), f"no device {name!r} in the testbed; "
                        f"known: {known}")
        elif name in seen:
            src.problem(("units", "devices", i), f"device {name!r} is listed twice")
        seen.add(str(name))
    optics = units.get("optics")
    if isinstance(optics, list):
        for i, where in enumerate(optics):
            _check_port(where, ("units", "optics", i), seen, testbed, src)
    serials = units.get("serials")
    if isinstance(serials, dict):
        for where in serials:
            loc: Loc = ("units", "serials", where)
            match = LOCATION.match(str(where))
            if match is None or match["device"] not in seen:
                src.problem(loc, "expected 'device' or 'device:port' of a device under test")
            elif match["port"] is not None:
                _check_port(where, loc, seen, testbed, src)


def _check_port(where: Any, loc: Loc, devices: set[str], testbed: Any, src: Source) -> None:
    match = LOCATION.match(str(where))
    if match is None or match["port"] is None:
        src.problem(loc, "expected 'device:port'")
        return
    if match["device"] not in devices:
        src.problem(loc, f"device {match['device']!r} is not under test (units.devices)")
        return
    if testbed.peer(match["device"], match["port"]) is None:
        src.problem(loc, f"port {where} is not cabled in the testbed (no optic to test)")


def _check_chamber(chamber: Any, testbed: Any, src: Source) -> None:
    from labtest.capabilities.instruments import ThermalChamber
    from labtest.registry import DriverNotFound, driver_class, provides

    if not isinstance(chamber, dict) or not isinstance(chamber.get("device"), str):
        return
    name = chamber["device"]
    device = testbed.devices.get(name)
    if device is None:
        src.problem(("chamber", "device"), f"no device {name!r} in the testbed")
        return
    try:
        cls = driver_class(device.driver)
    except DriverNotFound as exc:
        src.problem(("chamber", "device"), str(exc))
        return
    if not provides(cls, ThermalChamber):
        src.problem(("chamber", "device"), f"{name!r} ({device.driver}) is not a thermal chamber")


def _check_durations(data: dict[str, Any], src: Source) -> None:
    duration_h = data.get("duration_h")
    if not isinstance(duration_h, int | float) or duration_h <= 0:
        return
    duration_s = float(duration_h) * 3600.0
    monitors = _mapping(data.get("monitors"))
    for name, monitor in monitors.items():
        period = monitor.get("period_s") if isinstance(monitor, dict) else None
        if isinstance(period, int | float) and period > duration_s:
            src.problem(
                ("monitors", name, "period_s"),
                f"period {period:g} s is longer than the run ({duration_s:g} s)",
            )
    chamber = data.get("chamber")
    if isinstance(chamber, dict):
        try:
            chamber_model = Chamber.model_validate(chamber)
        except ValueError:
            return  # the schema reports it
        total = profile_duration_s(chamber_model)
        if total > duration_s + 1e-6:
            src.problem(
                ("chamber", "profile"),
                f"the profile lasts {total / 3600:.2f} h, longer than duration_h {duration_h:g}",
            )
