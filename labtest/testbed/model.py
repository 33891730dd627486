"""The testbed schema: devices, how to reach them, the cabling plan, emulation.

Field names carry units (``timeout_s``, ``speed_gbps``) so a YAML author never
has to guess. Secrets arrive here already resolved (see ``loader``) and stay
``SecretStr`` so that a ``repr`` or a traceback cannot show them.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator

from labtest.measure.limits import Waiver

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
ENDPOINT = re.compile(r"^(?P<device>[A-Za-z0-9][A-Za-z0-9_.\-]*):(?P<port>\S+)$")

#: roles whose devices are switches (the unit under test's forwarding plane); every other
#: role ends a path
SWITCH_ROLES = frozenset({"leaf", "spine", "switch", "superspine"})

#: keys whose values are secrets wherever they appear in a testbed file
SECRET_KEYS = frozenset({"password", "community", "auth_key", "priv_key", "passphrase"})


class Strict(BaseModel):
    # .inf / .nan are YAML floats but never a meaningful setting (time_scale: .inf)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class SshSettings(Strict):
    port: int = Field(22, ge=1, le=65535)
    username: str
    password: SecretStr | None = None
    key_file: Path | None = None
    passphrase: SecretStr | None = None
    known_hosts: Path | None = Field(
        None, description="defaults to ~/.ssh/known_hosts; a relative path is relative to the file"
    )
    host_key_policy: Literal["reject", "accept-new"] = "reject"
    timeout_s: float = Field(10.0, gt=0)
    command_timeout_s: float = Field(30.0, gt=0)
    prompt: str = Field(r"[\w.\-@:~/()]+ ?[#>$] ?$", description="regex of the CLI prompt")


class SnmpSettings(Strict):
    version: Literal["2c", "3"] = "2c"
    port: int = Field(161, ge=1, le=65535)
    community: SecretStr | None = None
    user: str | None = None
    auth_protocol: Literal["SHA", "SHA224", "SHA256", "SHA384", "SHA512", "MD5"] = "SHA"
    auth_key: SecretStr | None = None
    priv_protocol: Literal["AES", "AES192", "AES256", "DES"] = "AES"
    priv_key: SecretStr | None = None
    context: str = ""
    timeout_s: float = Field(2.0, gt=0)
    retries: int = Field(1, ge=0, le=10)

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int | float) else value


class VisaSettings(Strict):
    resource: str
    backend: str = "@py"
    read_termination: str = "\n"
    write_termination: str = "\n"
    timeout_s: float = Field(5.0, gt=0)
    check_errors: bool = True


class PacketSettings(Strict):
    interfaces: dict[str, str] = Field(default_factory=dict, description="port -> OS interface")
    netns: str | None = None


class Device(Strict):
    role: str = Field(pattern=NAME)
    driver: str = Field(pattern=NAME)
    address: str | None = None
    ssh: SshSettings | None = None
    snmp: SnmpSettings | None = None
    visa: VisaSettings | None = None
    packet: PacketSettings | None = None
    ports: list[str] = Field(default_factory=list)
    vars: dict[str, Any] = Field(default_factory=dict, description="driver-specific options")
    replay: Path | None = Field(None, description="answer from a --record'ed session file")

    @property
    def transports(self) -> list[str]:
        return [t for t in ("ssh", "snmp", "visa", "packet") if getattr(self, t) is not None]


class Endpoint(Strict):
    device: str
    port: str

    def __str__(self) -> str:
        return f"{self.device}:{self.port}"


class Link(Strict):
    a: str
    b: str
    speed_gbps: float | None = Field(None, gt=0)
    optic: str | None = None
    length_m: float | None = Field(None, ge=0)

    @field_validator("a", "b")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        if not ENDPOINT.match(value):
            raise ValueError("expected 'device:port'")
        return value

    @property
    def ends(self) -> tuple[Endpoint, Endpoint]:
        return _endpoint(self.a), _endpoint(self.b)

    @property
    def name(self) -> str:
        return f"{self.a}--{self.b}"


@functools.lru_cache(maxsize=4096)
def _endpoint(text: str) -> Endpoint:
    """One frozen Endpoint per text: ``Link.ends`` is read in every path walk (the doctor's
    trace reader walked 200k of them an interval, 86 % of its CPU, building each anew)."""
    match = ENDPOINT.match(text)
    assert match is not None  # validated on load
    return Endpoint(device=match["device"], port=match["port"])


class FaultSpec(Strict):
    kind: str = Field(pattern=NAME)
    target: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    at_s: float = Field(0.0, ge=0, description="virtual time at which the fault starts")
    duration_s: float | None = Field(None, gt=0)


class BfdTimers(Strict):
    """BFD timers of the kernel lab's FRR sessions (RFC 5880)."""

    detect_multiplier: int = Field(3, ge=1, le=255)
    receive_interval_ms: int = Field(100, ge=10, le=60000)
    transmit_interval_ms: int = Field(100, ge=10, le=60000)


class Noise(Strict):
    """Production's noise on an emulated lab (the doctor's evaluation): what a healthy
    fabric shows that must not be paged."""

    #: a busy control plane: each SSH answer of a device waits a random 0..max device
    #: seconds first; keyed by device name, ``"*"`` for every other device
    answer_delay_s: dict[str, float] = Field(default_factory=dict)
    #: a probe's answer lost now and then whatever path it took (a busy host, an ICMP rate
    #: limit): the fraction of the probe mesh's answers dropped at random, charged to no
    #: link. Not a link's loss: a link that corrupts 1e-5 of its frames is a faulty link
    #: (400GBASE-R's frame loss target is ~6e-10) and shows FCS errors by the thousand
    probe_loss: float = Field(0.0, ge=0.0, le=0.05)

    @field_validator("answer_delay_s")
    @classmethod
    def _delays(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {k: d for k, d in v.items() if not 0.0 <= d <= 600.0}
        if bad:
            raise ValueError(f"answer delays must be 0..600 s: {bad}")
        return v


class Emulation(Strict):
    #: "model": the fabric model and its emulators; "kernel": real FRR, lldpd, snmpd and
    #: sshd in network namespaces (docs/kernel-lab.md)
    backend: Literal["model", "kernel"] = "model"
    seed: int = 0
    time_scale: float = Field(1.0, gt=0)
    ambient_c: float = 25.0
    faults: list[FaultSpec] = Field(default_factory=list)
    noise: Noise | None = None
    bfd: BfdTimers | None = Field(None, description="kernel backend: BFD timers of every session")
    bgp: Literal["numbered", "unnumbered"] = Field(
        "numbered", description="kernel backend: eBGP over each fabric link's /31 (numbered), "
        "or on the interface over IPv6 link-local with IPv4 routes via IPv6 next hops "
        "(unnumbered, RFC 5549)")


class Testbed(Strict):
    name: str = Field(pattern=NAME)
    description: str = ""
    limits: Path | None = Field(None, description="limits profile, relative to the file")
    suite_settings: Path | None = Field(
        None, description="run settings ({family: {key: value}}) this lab merges over the "
        "suites' own (shorter traffic for software forwarding, say); relative to the file")
    devices: dict[str, Device]
    links: list[Link] = Field(default_factory=list)
    emulation: Emulation | None = None
    #: holes this lab's sign-off accepts (requirement, units, reason, source), beside the
    #: limits profile's own: a waiver that names this lab's units belongs with this lab
    waivers: list[Waiver] = Field(default_factory=list)

    _source: Path | None = PrivateAttr(None)
    _warnings: list[str] = PrivateAttr(default_factory=list)

    @property
    def source(self) -> Path | None:
        return self._source

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings)

    def by_role(self, role: str) -> dict[str, Device]:
        return {n: d for n, d in self.devices.items() if d.role == role}

    def links_of(self, device: str) -> list[Link]:
        return [lk for lk in self.links if device in (lk.ends[0].device, lk.ends[1].device)]

    def link_at(self, device: str, port: str) -> Link | None:
        """The planned link cabled at ``device:port``."""
        return next((lk for lk in self.links
                     if any((e.device, e.port) == (device, port) for e in lk.ends)), None)

    def peer(self, device: str, port: str) -> Endpoint | None:
        """The far end of ``device:port`` in the cabling plan."""
        lk = self.link_at(device, port)
        if lk is None:
            return None
        a, b = lk.ends
        return b if (a.device, a.port) == (device, port) else a
