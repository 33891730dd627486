"""Load a testbed file: parse, resolve secrets, validate, cross-check the cabling.

Everything a run would otherwise trip over later is checked here and reported
at once, each with ``file:line:col``: driver names against the installed
``labtest.drivers`` entry points (with a "did you mean"), fault kinds, targets
and parameters against the emulation's fault catalogue, numbers that must be
finite, and devices named in another device's ``vars`` (PDU feeds, VOA link,
power-meter taps, BERT port). Faults are held against what each declares it may
target and take (``faultcheck``), for the model and the kernel backend alike.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from labtest import installed, secrets
from labtest.errors import SecretError
from labtest.testbed.faultcheck import Declared, Layout, check_fault
from labtest.testbed.faultcheck import suggest as _suggest
from labtest.testbed.model import SECRET_KEYS, Testbed
from labtest.yamlsource import Loc, Source, read, validate

PATH_KEYS = frozenset({"known_hosts", "key_file", "limits", "replay", "suite_settings"})


def load_testbed(path: str | Path, *, check_drivers: bool = True) -> Testbed:
    """Return the validated testbed or raise ``ConfigError`` listing every problem.

    ``check_drivers=False``: for a caller outside the pytest session (``labtest run``'s
    check before it starts one), which cannot see drivers a lab's conftest registers.
    """
    path = Path(path)
    src = read(path)
    warnings: list[str] = []
    _prepare(src.data, (), src, warnings)
    _check_finite_vars(src.data, src)
    testbed = validate(src, Testbed, SECRET_KEYS)
    _check_references(src.data, src)
    if check_drivers:
        _check_drivers(src.data, src)
    _check_device_vars(src.data, src)
    _check_faults(src.data, src)
    _check_noise(src.data, src)
    src.raise_if_problems()
    assert testbed is not None
    testbed._source = path
    testbed._warnings = warnings
    return testbed


def _prepare(node: Any, loc: Loc, src: Source, warnings: list[str]) -> None:
    """Resolve secret references and relative paths in place, before validation."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _prepare(item, (*loc, i), src, warnings)
        return
    if not isinstance(node, dict):
        return
    for key, value in list(node.items()):
        here = (*loc, key)
        if key in SECRET_KEYS and isinstance(value, str):
            if not secrets.is_reference(value):
                place, dotted = src.where(here)
                warnings.append(
                    f"{place}: {dotted}: literal secret in the file; use ${{env:NAME}} "
                    "or ${file:path}"
                )
            try:
                node[key] = secrets.resolve(value, src.path.parent)
            except SecretError as exc:
                src.problem(here, str(exc))
            except UnicodeDecodeError:
                src.problem(here, "the secret file is not UTF-8 text (a binary file?)")
            except (OSError, ValueError) as exc:
                src.problem(here, f"cannot read the secret: {type(exc).__name__}")
        elif key in PATH_KEYS and isinstance(value, str) and value:
            p = Path(value).expanduser()
            node[key] = str(p if p.is_absolute() else (src.path.parent / p))
        else:
            _prepare(value, here, src, warnings)


def _check_references(data: Any, src: Source) -> None:
    """Cross-field checks on the raw data, so they run even when a field is mistyped."""
    if not isinstance(data, dict):
        return
    devices: dict[Any, Any] = data["devices"] if isinstance(data.get("devices"), dict) else {}
    limits = data.get("limits")
    if isinstance(limits, str) and not Path(limits).is_file():
        src.problem(("limits",), f"limits profile not found: {limits}")
    settings = data.get("suite_settings")
    if isinstance(settings, str) and not Path(settings).is_file():
        src.problem(("suite_settings",), f"suite settings file not found: {settings}")
    links: list[Any] = data["links"] if isinstance(data.get("links"), list) else []
    used: Counter[str] = Counter()
    for i, link in enumerate(links):
        if not isinstance(link, dict):
            continue
        for side in ("a", "b"):
            end = link.get(side)
            if not isinstance(end, str) or ":" not in end:
                continue  # the schema reports the shape
            dev_name, port = end.split(":", 1)
            dev = devices.get(dev_name)
            if not isinstance(dev, dict):
                known = ", ".join(sorted(map(str, devices))) or "none"
                src.problem(("links", i, side), f"unknown device {dev_name!r}; known: {known}")
                continue
            ports = dev.get("ports")
            if isinstance(ports, list) and ports and port not in ports:
                src.problem(("links", i, side), f"device {dev_name!r} has no port {port!r}")
            used[end] += 1
            if used[end] == 2:
                src.problem(("links", i, side), f"port {end} is cabled more than once")
        if link.get("a") is not None and link.get("a") == link.get("b"):
            src.problem(("links", i), "a link cannot connect a port to itself")
    for name, dev in devices.items():
        if isinstance(dev, dict):
            _check_device(str(name), dev, src)


def _check_device(name: str, dev: dict[str, Any], src: Source) -> None:
    loc: Loc = ("devices", name)
    ssh, snmp = dev.get("ssh"), dev.get("snmp")
    if isinstance(ssh, dict) and not (ssh.get("password") or ssh.get("key_file")):
        src.problem((*loc, "ssh"), "needs 'password' or 'key_file'")
    if (ssh or snmp) and not dev.get("address") and not dev.get("replay"):
        src.problem(loc, "'address' is required for ssh and snmp")
    if not isinstance(snmp, dict):
        return
    version = str(snmp.get("version", "2c"))
    if version == "2c" and not snmp.get("community"):
        src.problem((*loc, "snmp"), "SNMP v2c needs 'community'")
    if version == "3":
        for key in ("user", "auth_key", "priv_key"):
            if not snmp.get(key):
                src.problem((*loc, "snmp"), f"SNMP v3 authPriv needs {key!r}")


def _check_finite_vars(data: Any, src: Source) -> None:
    """The schema refuses ``.inf``/``.nan`` in its own fields; ``vars`` and fault
    ``params`` are free-form, so they are scanned here."""
    for name, dev in _devices(data).items():
        if isinstance(dev, dict) and "vars" in dev:
            _check_finite(dev["vars"], ("devices", name, "vars"), src)
    emulation = data.get("emulation") if isinstance(data, dict) else None
    faults = emulation.get("faults") if isinstance(emulation, dict) else None
    for i, spec in enumerate(faults if isinstance(faults, list) else []):
        if isinstance(spec, dict) and "params" in spec:
            _check_finite(spec["params"], ("emulation", "faults", i, "params"), src)


def _check_finite(node: Any, loc: Loc, src: Source) -> None:
    if isinstance(node, float) and not math.isfinite(node):
        src.problem(loc, f"number must be finite; found {node}")
    elif isinstance(node, dict):
        for key, value in node.items():
            _check_finite(value, (*loc, key), src)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _check_finite(value, (*loc, i), src)


def _devices(data: Any) -> dict[Any, Any]:
    if not isinstance(data, dict) or not isinstance(data.get("devices"), dict):
        return {}
    devices: dict[Any, Any] = data["devices"]
    return devices


def installed_drivers() -> list[str]:
    """Driver names a testbed may use: the ``labtest.drivers`` entry points, and drivers a
    lab's conftest registered (``labtest.registry.register_driver``)."""
    return installed.driver_names()


def _check_drivers(data: Any, src: Source) -> None:
    known = installed_drivers()
    for name, dev in _devices(data).items():
        driver = dev.get("driver") if isinstance(dev, dict) else None
        if isinstance(driver, str) and driver not in known:
            src.problem(
                ("devices", name, "driver"), f"unknown driver {driver!r}; {_suggest(driver, known)}"
            )


#: vars that name other devices: key -> "endpoint" (device:port) or "device"
REFERENCE_VARS = {
    "taps": "endpoint",
    "link": "endpoint",
    "links": "endpoint",
    "port": "endpoint",
    "feeds": "device",
    "outlets": "device",
    "mpi_host": "device",
}


def _check_device_vars(data: Any, src: Source) -> None:
    devices = _devices(data)
    known = sorted(map(str, devices))
    for name, dev in devices.items():
        vars_ = dev.get("vars") if isinstance(dev, dict) else None
        if not isinstance(vars_, dict):
            continue
        for key, kind in REFERENCE_VARS.items():
            if key not in vars_:
                continue
            value = vars_[key]
            items: list[tuple[Loc, Any]]
            if isinstance(value, dict):
                items = [(("devices", name, "vars", key, k), v) for k, v in value.items()]
            elif isinstance(value, list):
                items = [(("devices", name, "vars", key, i), v) for i, v in enumerate(value)]
            else:
                items = [(("devices", name, "vars", key), value)]
            for loc, ref in items:
                if not isinstance(ref, str):
                    continue
                if kind == "endpoint" and ":" not in ref:
                    continue  # a plain port of this device (e.g. a host's own port)
                target, _, port = ref.partition(":")
                other = devices.get(target)
                if not isinstance(other, dict):
                    src.problem(loc, f"names unknown device {target!r}; {_suggest(target, known)}")
                    continue
                ports = other.get("ports")
                if port and isinstance(ports, list) and ports and port not in ports:
                    src.problem(loc, f"device {target!r} has no port {port!r}")


def _check_faults(data: Any, src: Source) -> None:
    """Each fault against its declaration (kind, target type and existence, params and
    their ranges): what the lab could not inject is refused here, not mid-run."""
    emulation = data.get("emulation") if isinstance(data, dict) else None
    if not isinstance(emulation, dict):
        return
    faults = emulation.get("faults")
    if not isinstance(faults, list) or not faults:
        return
    backend = emulation.get("backend", "model")
    catalogue = _fault_declarations(backend)
    if catalogue is None:
        if backend in ("model", "kernel"):  # never unchecked: say why (else the schema does)
            src.problem(("emulation", "backend"), f"no installed package declares the faults "
                        f"of backend {backend!r} (entry point group "
                        f"{installed.FAULT_BACKENDS}): is labtest installed (pip install .)?")
        return
    layout = Layout.of(data)
    for i, spec in enumerate(faults):
        if isinstance(spec, dict):
            for where, message in check_fault(i + 1, spec, catalogue, layout):
                src.problem(("emulation", "faults", i, *where), message)


def _check_noise(data: Any, src: Source) -> None:
    """``emulation.noise.answer_delay_s`` keys are devices (or ``*``): a typo would leave
    the device answering on time, and the evaluation would think it noisy."""
    emulation = data.get("emulation") if isinstance(data, dict) else None
    noise = emulation.get("noise") if isinstance(emulation, dict) else None
    delays = noise.get("answer_delay_s") if isinstance(noise, dict) else None
    devices = data.get("devices") if isinstance(data, dict) else None
    if isinstance(emulation, dict) and noise and emulation.get("backend") == "kernel":
        src.problem(("emulation", "noise"), "noise is the model backend's (the kernel lab's "
                    "answers and losses are the real software's)")
    if not isinstance(delays, dict) or not isinstance(devices, dict):
        return
    known = [str(d) for d in devices]
    for name in delays:
        if name != "*" and name not in devices:
            src.problem(("emulation", "noise", "answer_delay_s", name),
                        f"names unknown device {name!r}; {_suggest(str(name), known)}")


def _fault_declarations(backend: Any) -> Mapping[str, Declared] | None:
    """The faults a backend can inject (``labtest.fault_backends`` entry points: the
    emulation declares them, the loader does not import it); loaded only for a testbed that
    injects faults (the model's catalogue pulls numpy)."""
    return installed.fault_declarations(str(backend))
