"""The emulated lab: one fabric model, one emulator per device on 127.0.0.1.

Each device's driver name picks a *personality* (SONiC, EOS, Linux host, an
instrument …) that says what the device serves: an SSH CLI, an SNMP MIB, a
SCPI socket. The lab starts a server for each, with generated host keys and
credentials, and hands back a copy of the testbed that points at them, so the
real drivers run unchanged. Stopping the lab leaves no thread or socket.
Its own temporary folder (keys, secrets) is recorded as a run (``labtest.runs``), and
starting a lab reaps the leftovers of dead runs: a SIGKILLed lab's folder goes too.
"""

from __future__ import annotations

import importlib
import logging
import os
import random
import secrets as pysecrets
import shutil
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import SecretStr

from labtest import labtime, runs, safefs
from labtest.emulation.model.clock import serving
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.scpiserver import ScpiServer
from labtest.emulation.snmpagent import SnmpAgent, V3User
from labtest.emulation.sshserver import HandlerFactory, SshServer
from labtest.emulation.written import Secrets, absolute_paths
from labtest.secrets import register
from labtest.testbed.model import Device, SnmpSettings, SshSettings, Testbed, VisaSettings

log = logging.getLogger("labtest.emulation")

#: ``LABTEST_ELASTIC_CLOCK=0``: emulated labs follow the wall clock (scaled) without
#: skipping idle time, as before issue 19 (``bench/acceptance_speed.py`` compares the two)
ELASTIC_ENV = "LABTEST_ELASTIC_CLOCK"
#: how often the servers' silence follows the model's unreachable devices (wall seconds)
REACHABILITY_POLL_S = 0.05


@dataclass
class Served:
    """What one emulated device offers; ``None`` means the protocol is not served."""

    cli: HandlerFactory | None = None
    mib: Any = None  # a MibProvider for SnmpAgent
    scpi: Any = None  # a ScpiHandler for ScpiServer
    idn: str = "LabTest,Emulated,EMU0001,0.1"
    banner: str = ""
    allow_exec: bool = True
    stop: Callable[[], None] | None = None  # background work of the personality
    #: merged into the device's ``vars`` in the emulated testbed (e.g. an HTTP endpoint
    #: the personality serves itself, such as an OTG server's location)
    vars_update: dict[str, Any] = field(default_factory=dict)


Personality = Callable[[Fabric, str, Device], Served]

#: driver name -> "module:function" building that device's personality
PERSONALITIES: dict[str, str] = {
    "sonic": "labtest.emulation.personalities.sonic:serve",
    "eos": "labtest.emulation.personalities.eos:serve",
    "nxos": "labtest.emulation.personalities.nxos:serve",
    "linux": "labtest.emulation.personalities.linux:serve",
    "opm": "labtest.emulation.personalities.lab_instruments:serve_power_meter",
    "voa": "labtest.emulation.personalities.lab_instruments:serve_attenuator",
    "optical-switch": "labtest.emulation.personalities.lab_instruments:serve_optical_switch",
    "bert": "labtest.emulation.personalities.lab_instruments:serve_bert",
    "chamber": "labtest.emulation.personalities.lab_instruments:serve_chamber",
    "pdu": "labtest.emulation.personalities.lab_instruments:serve_pdu",
    "snappi-tg": "labtest.emulation.personalities.otg:serve",
}
_local: dict[str, Personality] = {}


def register_personality(driver: str, factory: Personality) -> None:
    _local[driver] = factory


def personality(driver: str) -> Personality | None:
    if driver in _local:
        return _local[driver]
    target = PERSONALITIES.get(driver)
    if target is None:
        return None
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            return None
        raise
    return getattr(module, attr, None)


@dataclass
class _Device:
    served: Served
    ssh: SshServer | None = None
    snmp: SnmpAgent | None = None
    scpi: ScpiServer | None = None
    password: str = ""
    community: str = ""
    v3: V3User | None = None


@dataclass
class EmulatedLab:
    """Build with a testbed; ``start()`` returns the testbed to hand the drivers."""

    testbed: Testbed
    workdir: Path | None = None
    time_scale: float | None = None
    faults: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    #: skip the time in which every party only waits on virtual time (see model.clock);
    #: suites then wait on ``labtest.labtime``, which this lab drives while it runs
    elastic: bool = field(default_factory=lambda: os.environ.get(ELASTIC_ENV, "1") != "0")
    fabric: Fabric = field(init=False)
    skipped: dict[str, str] = field(default_factory=dict, init=False)
    start_s: float = field(default=0.0, init=False)  # how long start() took
    _own_workdir: bool = field(default=False, init=False)  # made by us: removed on stop
    _run: runs.Run | None = field(default=None, init=False)  # the record of that folder
    _devices: dict[str, _Device] = field(default_factory=dict, init=False)
    _watch: threading.Thread | None = field(default=None, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _secrets: list[Secrets] = field(default_factory=list, init=False)  # beside written files

    def start(self) -> Testbed:
        began = time.monotonic()
        if self.workdir is not None:  # a folder chosen for us: refuse before serving anything
            _check_known_hosts(self.workdir / "known_hosts")
        runs.reap()
        self.fabric = Fabric(self.testbed, time_scale=self.time_scale, realtime=True)
        self.fabric.clock.set_elastic(self.elastic)
        labtime.use(self.fabric.clock)
        for kind, target, params in self.faults:
            self.fabric.inject(kind, target, **params)
        try:
            for name, device in self.testbed.devices.items():
                self._start_device(name, device)
        except BaseException:
            self.stop()
            raise
        self._stop.clear()
        self._watch = threading.Thread(target=self._watch_reachability, daemon=True)
        self._watch.start()
        self.start_s = time.monotonic() - began
        return self.emulated_testbed()

    def _start_device(self, name: str, device: Device) -> None:
        factory = personality(device.driver)
        if factory is None:
            self.skipped[name] = f"no emulator for driver {device.driver!r}"
            return
        served = factory(self.fabric, name, device)
        dev = _Device(served)
        self._devices[name] = dev
        if served.cli is not None:
            dev.password = _credential()
            user = device.ssh.username if device.ssh else "admin"
            dev.ssh = SshServer(
                served.cli,
                username=user,
                password=dev.password,
                banner=served.banner,
                allow_exec=served.allow_exec,
                serving=self._serving,
                before_answer=self._late_answers(name),
            ).start()
        if served.mib is not None:
            dev.community = _credential()
            dev.v3 = V3User(f"lt-{name}", _credential(), _credential())
            dev.snmp = SnmpAgent(served.mib, community=dev.community, users=[dev.v3],
                                 serving=self._serving).start()
        if served.scpi is not None:
            dev.scpi = ScpiServer(served.scpi, idn=served.idn, serving=self._serving)
            dev.scpi.start()

    def _late_answers(self, name: str) -> Callable[[], None] | None:
        """``emulation.noise.answer_delay_s``: a wait of 0..max device seconds before each
        answer of this device, drawn from the lab's seed (a busy control plane)."""
        noise = self.testbed.emulation.noise if self.testbed.emulation else None
        delays = noise.answer_delay_s if noise is not None else {}
        most = delays.get(name, delays.get("*", 0.0))
        if most <= 0:
            return None
        rng = random.Random(f"{self.fabric.seed}:{name}:answers")
        clock = self.fabric.clock

        def wait() -> None:
            clock.sleep(rng.uniform(0.0, most))

        return wait

    def _serving(self) -> Any:
        """Held while an emulator answers a request: the elastic clock keeps its plain pace then."""
        return serving(self.fabric.clock)

    def _watch_reachability(self) -> None:
        """An unreachable device answers nothing on any protocol until it is back; a
        rebooting one refuses SSH connections at once (its clients wait on no timeout).

        Modes change only on a transition, so a test may set a server's own mode
        (``drop``, ``slow``) while its device stays reachable.
        """
        state_now: dict[str, str] = {}
        while not self._stop.wait(REACHABILITY_POLL_S):
            dark = self.fabric.unreachable()  # steps the model only when a fault starts or ends
            refusing = self.fabric.refusing() if dark else frozenset()
            for name, dev in self._devices.items():
                state = "refuse" if name in refusing else "silent" if name in dark else "normal"
                if state_now.get(name, "normal") == state:
                    continue
                state_now[name] = state
                silent = state != "normal"
                if dev.ssh is not None:
                    if state == "refuse":
                        dev.ssh.refuse()
                    else:
                        dev.ssh.mode = "silent" if silent else "normal"
                if dev.snmp is not None:
                    dev.snmp.silent = silent
                if dev.scpi is not None:
                    dev.scpi.set_mode("silent" if silent else "normal")

    def emulated_testbed(self) -> Testbed:
        """The testbed with every emulated device pointing at its local server."""
        known_hosts = self._known_hosts()
        devices = {}
        for name, device in self.testbed.devices.items():
            dev = self._devices.get(name)
            devices[name] = device if dev is None else self._point(device, dev, known_hosts)
        tb = self.testbed.model_copy(update={"devices": devices})
        tb._source = self.testbed.source
        return tb

    def _point(self, device: Device, dev: _Device, known_hosts: Path) -> Device:
        update: dict[str, Any] = {"address": "127.0.0.1"}
        if dev.served.vars_update:
            update["vars"] = {**device.vars, **dev.served.vars_update}
        if dev.ssh is not None:
            register(dev.password)
            base = device.ssh or SshSettings(username=dev.ssh.username)
            update["ssh"] = base.model_copy(
                update={
                    "port": dev.ssh.port,
                    "password": SecretStr(dev.password),
                    "key_file": None,
                    "known_hosts": known_hosts,
                    "host_key_policy": "reject",
                }
            )
        if dev.snmp is not None and dev.v3 is not None:
            register(dev.community)
            base_snmp = device.snmp or SnmpSettings(community=SecretStr(dev.community))
            update["snmp"] = base_snmp.model_copy(
                update={
                    "port": dev.snmp.port,
                    "community": SecretStr(dev.community),
                    "user": dev.v3.name,
                    "auth_key": SecretStr(dev.v3.auth_key),
                    "priv_key": SecretStr(dev.v3.priv_key),
                    "auth_protocol": "SHA",
                    "priv_protocol": "AES",
                    "context": "",
                }
            )
        if dev.scpi is not None:
            base_visa = device.visa or VisaSettings(resource=dev.scpi.resource)
            update["visa"] = base_visa.model_copy(
                update={"resource": dev.scpi.resource, "backend": "@py"}
            )
        return device.model_copy(update=update)

    def _known_hosts(self) -> Path:
        """The lab's host keys, in a file that starts with :data:`KNOWN_HOSTS_HEADER`: one
        there without it (``labtest emulate --out ~/.ssh/lab.yaml``) is never overwritten."""
        workdir = self._workdir()
        path = workdir / "known_hosts"
        _check_known_hosts(path)
        lines = [d.ssh.known_hosts_line() for d in self._devices.values() if d.ssh is not None]
        text = KNOWN_HOSTS_HEADER + "".join(line.rstrip("\n") + "\n" for line in lines)
        safefs.create_private(path, text.encode(), 0o644)  # never through a planted link
        return path

    def _workdir(self) -> Path:
        if self.workdir is None:
            import tempfile

            run_id = runs.new_id()
            workdir = Path(tempfile.gettempdir()) / f"labtest-emulate-{run_id}"
            self._run = runs.Run.begin(run_id, folders=[workdir])
            try:
                workdir.mkdir(mode=0o700)  # exclusive: never a folder or link already there
            except OSError:
                self._run.end()
                raise
            self.workdir = workdir
            self._own_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self.workdir

    def write_testbed(self, path: Path) -> Path:
        """Write the emulated testbed as YAML with absolute paths; secrets go to files
        beside it (:meth:`remove_secrets` takes them back)."""
        tb = self.emulated_testbed()
        secrets = Secrets(path)
        self._secrets.append(secrets)
        data = tb.model_dump(mode="json", exclude_none=True)
        absolute_paths(data)
        secrets.put_all(tb, data)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def remove_secrets(self) -> None:
        """The secret files of every testbed written: they name a lab that stopped."""
        for secrets in self._secrets:
            secrets.remove()
        self._secrets.clear()

    def stop(self) -> None:
        self._stop.set()
        try:
            if hasattr(self, "fabric"):
                labtime.release(self.fabric.clock)
                self.fabric.clock.set_elastic(False)
            if self._watch is not None:
                self._watch.join(2.0)
                self._watch = None
            for dev in self._devices.values():
                for server in (dev.ssh, dev.snmp, dev.scpi):
                    if server is not None:
                        server.stop()
                if dev.served.stop is not None:
                    dev.served.stop()
            self._devices.clear()
        finally:  # keys and generated secrets go even if a server would not stop
            self.remove_secrets()
            if self._own_workdir and self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)
            if self._run is not None and not (self.workdir and self.workdir.exists()):
                self._run.end()
                self._run = None

    def __enter__(self) -> Testbed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def server(self, name: str) -> Any:
        """The running servers of one device (tests use it to inject transport faults)."""
        return self._devices[name]


def _credential() -> str:
    return pysecrets.token_urlsafe(12)


#: the first line of every known_hosts an emulated lab writes (how it knows the file is its own)
KNOWN_HOSTS_HEADER = "# labtest emulated lab: SSH host keys of its servers (rewritten at start)\n"


def _check_known_hosts(path: Path) -> None:
    """Refuse to overwrite a known_hosts labtest did not write (a user's own, or a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise safefs.UnsafePath(path, "it is a symbolic link or cannot be read "
                                f"({exc.strerror}); labtest will not overwrite it") from None
    with os.fdopen(fd, "rb") as fh:
        regular = stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
        first = fh.readline(len(KNOWN_HOSTS_HEADER) + 1).decode("utf-8", "replace") \
            if regular else ""
    if first != KNOWN_HOSTS_HEADER:
        raise safefs.UnsafePath(
            path, "labtest did not write this known_hosts and will not overwrite it; "
            "choose an --out folder without one (the lab writes its host keys there)",
        )
