"""What a fault may be aimed at, and the check that a testbed's faults can be done.

Every fault declares, as data beside its effect, the target types it accepts
(``TargetType``), its parameter model (pydantic ranges) and which parameters
name testbed objects (``refs``). :func:`check_fault` holds a fault entry
against that declaration and the testbed's devices and cabling, so
``labtest testbed check``, ``labtest run`` and ``labtest emulate`` refuse, with
a located message saying what would fit, what the emulated lab could not do;
otherwise the fault fails later, inside a suite, as a traceback. Light on
purpose (pydantic only): the testbed loader imports it.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

TargetType = Literal[
    "port", "link", "fabric_link", "device", "switch", "host", "host_port", "every_switch"
]

#: how each target type reads in a message (followed by " like 'x'") and in docs/faults.md
TARGET_TEXT: dict[str, str] = {
    "port": "a port",
    "link": "a link",
    "fabric_link": "a switch-to-switch link",
    "device": "a device",
    "switch": "a switch",
    "host": "a host",
    "host_port": "a host's port",
    "every_switch": "no target (every switch)",
}
TARGET_FORM: dict[str, str] = {
    "port": "cabled `device:port`",
    "link": "`a--b` as named in `links`, or either cabled end `device:port`",
    "fabric_link": "a link (`a--b` or either end) whose both ends are switches",
    "device": "any device name",
    "switch": "a cabled device whose role is not `host` or `tg`",
    "host": "a cabled device with role `host`",
    "host_port": "cabled `host:port` of a device with role `host`",
    "every_switch": "`\"\"` (empty)",
}

#: roles that are traffic end points, never switches (as the traffic model has them)
ENDPOINT_ROLES = frozenset({"host", "tg"})

Where = tuple[str | int, ...]


class Declared(Protocol):
    """A fault's declaration (the model catalogue's ``FaultType``, the kernel lab's)."""

    @property
    def targets(self) -> tuple[TargetType, ...]: ...

    @property
    def params(self) -> type[BaseModel]: ...

    @property
    def refs(self) -> Mapping[str, tuple[TargetType, ...]]: ...


def suggest(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}known: {', '.join(known) or 'none'}"


def _device(endpoint: str) -> str:
    return endpoint.partition(":")[0]


def _devices_in(target: str) -> list[str]:
    return [_device(part) for part in target.split("--") if part]


@dataclass
class Layout:
    """The devices (name -> role) and cabling (link ends, in file order) faults aim at."""

    roles: dict[str, str]
    links: list[tuple[str, str]]
    peer: dict[str, str] = field(init=False)  # cabled port -> the far end
    link_of: dict[str, str] = field(init=False)  # cabled port -> its link's name

    def __post_init__(self) -> None:
        self.peer, self.link_of = {}, {}
        for a, b in self.links:
            self.peer[a], self.peer[b] = b, a
            self.link_of[a] = self.link_of[b] = f"{a}--{b}"

    @classmethod
    def of(cls, data: Any) -> Layout:
        """From raw testbed data, whatever else is wrong with it (the schema says that)."""
        data = data if isinstance(data, dict) else {}
        devices = data.get("devices") if isinstance(data.get("devices"), dict) else {}
        links = data.get("links") if isinstance(data.get("links"), list) else []
        roles = {str(n): str(d.get("role", "")) for n, d in devices.items() if isinstance(d, dict)}
        ends = [
            (lk["a"], lk["b"])
            for lk in links
            if isinstance(lk, dict) and isinstance(lk.get("a"), str)
            and isinstance(lk.get("b"), str)
        ]
        return cls(roles, ends)

    def cabled(self, device: str) -> list[str]:
        return [p for p in self.peer if _device(p) == device]

    def is_switch(self, device: str) -> bool:
        return self.roles.get(device, "host") not in ENDPOINT_ROLES and bool(self.cabled(device))

    def is_host(self, device: str) -> bool:
        return self.roles.get(device) == "host" and bool(self.cabled(device))

    def candidates(self, kind: TargetType) -> list[str]:
        """Every valid target of one type in this testbed (links by name, not by end)."""
        if kind == "port":
            return list(self.peer)
        if kind == "link":
            return [f"{a}--{b}" for a, b in self.links]
        if kind == "fabric_link":
            return [f"{a}--{b}" for a, b in self.links
                    if self.is_switch(_device(a)) and self.is_switch(_device(b))]
        if kind == "device":
            return list(self.roles)
        if kind == "switch":
            return [d for d in self.roles if self.is_switch(d)]
        if kind == "host":
            return [d for d in self.roles if self.is_host(d)]
        if kind == "host_port":
            return [p for p in self.peer if self.is_host(_device(p))]
        return [""]  # every_switch

    def accepts(self, kind: TargetType, target: str) -> bool:
        if target in self.candidates(kind):
            return True  # a link type also takes either cabled end, naming the link
        return kind in ("link", "fabric_link") and self.link_of.get(target) in self.candidates(kind)

    def identify(self, target: str) -> tuple[str, str | None]:
        """(what ``target`` is, or why it names nothing of this testbed)."""
        device, sep, port = target.partition(":")
        if "--" in target:
            a, _, b = target.partition("--")
            if f"{b}--{a}" in self.link_of.values():
                return "", f"no link {target!r}; it is named {f'{b}--{a}'!r} (as in links)"
            if target not in self.link_of.values():
                known = suggest(target, self.candidates("link"))
                return "", f"no link {target!r} in links; {known}"
            return "a link", None
        if device not in self.roles:
            return "", f"unknown device {device!r}; {suggest(device, list(self.roles))}"
        if sep and target not in self.peer:
            cabled = ", ".join(p.partition(":")[2] for p in self.cabled(device)) or "none"
            return "", f"device {device!r} has no cabled port {port!r} (cabled: {cabled})"
        if sep:
            return "a port", None
        role = self.roles[device]
        return f"a device (role {role}{'' if self.cabled(device) else ', not cabled'})", None

    def example(self, kind: TargetType, near: str) -> str:
        """``kind`` in words, with the valid target nearest to ``near`` as an example."""
        found = self.candidates(kind)
        if kind == "every_switch":
            return TARGET_TEXT[kind]
        if not found:
            return f"{TARGET_TEXT[kind]} (this testbed has none)"
        own = set(_devices_in(near))
        peers = {_device(self.peer[p]) for d in own for p in self.cabled(d)}
        for group in (own, peers):
            for c in found:
                if group & set(_devices_in(c)):
                    return f"{TARGET_TEXT[kind]} like {c!r}"
        return f"{TARGET_TEXT[kind]} like {found[0]!r}"


def aim_problem(
    kind: str, types_: Sequence[TargetType], value: str, layout: Layout, what: str = "target"
) -> str | None:
    """Why ``value`` cannot be a fault's ``what`` (its target or a param naming an object)."""
    if any(layout.accepts(t, value) for t in types_):
        return None
    need = " or ".join(layout.example(t, value) for t in types_)
    if not value:
        return f"{kind} needs a {what}: {need}"
    it, missing = layout.identify(value)
    if missing:
        return f"{what} {value!r}: {missing}"
    return f"{what} {value!r} is {it}; {kind} needs {need}"


# --- parameters ----------------------------------------------------------------------

_NAMES = {int: "an integer", float: "a number", str: "text", bool: "true or false"}
_PLURAL = {int: "integers", float: "numbers", str: "texts", bool: "true or false"}
_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, int | float) else str(x)


def _bounds(metadata: Sequence[Any], name: str) -> str:
    lo = hi = ""
    for m in metadata:
        if isinstance(m, FieldInfo):
            return _bounds(m.metadata, name)
        for attr, side, op in (("gt", "lo", "<"), ("ge", "lo", "<="),
                               ("lt", "hi", "<"), ("le", "hi", "<=")):
            value = getattr(m, attr, None)
            if value is None:
                continue
            if side == "lo":
                lo = f"{_num(value)} {op}"
            else:
                hi = f"{op} {_num(value)}"
    if not (lo or hi):
        return ""
    if not hi:  # "x > 0" reads better than "0 < x"
        value, op = lo.rsplit(" ", 1)
        return f"{name} {'>' if op == '<' else '>='} {value}"
    return " ".join(part for part in (lo, name, hi) if part)


def _type_text(tp: Any, plural: bool = False) -> str:
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is typing.Annotated:
        bounds = _bounds(args[1:], "x")
        return _type_text(args[0], plural) + (f" ({bounds})" if bounds else "")
    if origin in (typing.Union, types.UnionType):
        kinds = [_type_text(a) for a in args if a is not type(None)]
        return " or ".join(kinds) + (" or null" if type(None) in args else "")
    if origin in (list, tuple):
        inner = [a for a in args if a is not Ellipsis]
        return "a list of " + (_type_text(inner[0], plural=True) if inner else "values")
    return (_PLURAL if plural else _NAMES).get(tp, getattr(tp, "__name__", str(tp)))


def allowed(name: str, info: FieldInfo) -> str:
    """What a parameter takes: its type and range, e.g. ``a number, 0 < loss_db <= 30``."""
    bounds = _bounds(info.metadata, name)
    return _type_text(info.annotation) + (f", {bounds}" if bounds else "")


def param_problems(
    kind: str, model: type[BaseModel], raw: dict[str, Any]
) -> list[tuple[Where, str]]:
    """(where under ``params``, message) for each problem of ``raw``; every message names
    the parameter and what it allows, so nobody has to open the code to fix the file."""
    try:
        model.model_validate(raw)
    except ValidationError as exc:
        fields = model.model_fields
        out: list[tuple[Where, str]] = []
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if isinstance(p, str | int))
            path = "params" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
            name = str(loc[0]) if loc else ""
            if err["type"] == "extra_forbidden":
                takes = ", ".join(fields) or "no parameters"
                out.append((loc, f"{path}: unknown parameter; {kind} takes {takes}"))
            elif name in fields and err["type"] == "missing":
                out.append((loc, f"{path}: required; {allowed(name, fields[name])}"))
            elif name in fields:
                why = "out of range" if err["type"] in _RANGE_ERRORS else err["msg"]
                out.append((loc, f"{path} = {err.get('input')!r}: {why}; allowed: "
                                 f"{allowed(name, fields[name])}"))
            else:  # a rule across parameters (down_s shorter than period_s)
                out.append(((), f"params: {err['msg'].removeprefix('Value error, ')}"))
        return out
    return []


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    value = list(value) if isinstance(value, tuple) else value
    return "default " + ("null" if value is None else _num(value) if isinstance(value, int | float)
                         else repr(value))


def doc_cells(decl: Declared) -> tuple[str, str]:
    """docs/faults.md's target and parameter cells of one fault, from its declaration (a
    test holds the doc to them)."""
    target = " or ".join(f"`{t}`" for t in decl.targets)
    params = []
    for name, info in decl.params.model_fields.items():
        what = (" or ".join(TARGET_TEXT[t] for t in decl.refs[name]) if name in decl.refs
                else allowed(name, info))
        params.append(f"`{name}`: {what} ({_default(info)})")
    return target, "; ".join(params) or "—"


def check_fault(
    n: int, spec: Mapping[str, Any], catalogue: Mapping[str, Declared], layout: Layout
) -> list[tuple[Where, str]]:
    """(where under the entry, message) for each problem of fault entry ``n`` (1-based):
    its kind, its target's type and existence, its parameters' names and ranges."""
    kind = spec.get("kind")
    if not isinstance(kind, str):
        return []  # the schema reports it
    if kind not in catalogue:
        known = suggest(kind, sorted(catalogue))
        return [(("kind",), f"fault {n}: unknown fault {kind!r}; {known}")]
    decl, head = catalogue[kind], f"fault {n} ({kind})"
    out: list[tuple[Where, str]] = []
    target = spec.get("target", "")
    if isinstance(target, str):
        problem = aim_problem(kind, decl.targets, target, layout)
        if problem:
            out.append((("target",), f"{head}: {problem}"))
    params = spec.get("params") or {}
    if not isinstance(params, dict):
        return out  # the schema reports it
    for loc, msg in param_problems(kind, decl.params, params):
        out.append((("params", *loc), f"{head}: {msg}"))
    for name, types_ in decl.refs.items():
        value = params.get(name)
        if isinstance(value, str):
            problem = aim_problem(kind, types_, value, layout, f"params.{name}")
            if problem:
                out.append((("params", name), f"{head}: {problem}"))
    return out
