"""``labtest emulate``: run an emulated lab in the foreground until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from labtest.emulation.lab import EmulatedLab

SIGNAL_POLL_S = 0.2


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    em = sub.add_parser("emulate", help="run an emulated lab built from a testbed file")
    em.add_argument("testbed", type=Path, nargs="?")
    em.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND@TARGET[:k=v,...]",
        help="inject a fault, e.g. dirty_connector@leaf1:Ethernet0:loss_db=3 (repeatable)",
    )
    em.add_argument("--time-scale", type=float, help="virtual seconds per wall second")
    em.add_argument(
        "--out", type=Path, help="where to write the emulated testbed (default: a temp dir)"
    )
    em.add_argument("--duration-s", type=float, help="stop by itself after this many seconds")
    em.add_argument("--list-faults", action="store_true", help="print the fault catalogue")
    em.add_argument(
        "--clean",
        action="store_true",
        help="remove what dead runs left (their namespaces, the processes in them, their "
        "folders) and exit; every lab start does it too, live runs are never touched",
    )
    em.set_defaults(handler=_emulate)


def parse_fault(text: str) -> tuple[str, str, dict[str, Any]]:
    """``kind@target:k=v,k=v``. The target may itself contain ``:`` (``dev:port``, a link
    ``a:p--b:q``), and so may a value (``other=leaf2:Ethernet0``): the parameters start at
    the first ``:``-separated part holding a ``=``, which a target never has."""
    kind, _, rest = text.partition("@")
    params: dict[str, Any] = {}
    target = rest
    parts = rest.split(":")
    first = next((i for i, part in enumerate(parts) if "=" in part), None)
    if first:  # None (no parameters) or 0 (no target: left as it was written)
        target = ":".join(parts[:first])
        for pair in ":".join(parts[first:]).split(","):
            key, _, value = pair.partition("=")
            params[key.strip()] = yaml.safe_load(value)
    return kind.strip(), target.strip(), params


def _list_faults() -> int:
    from labtest.emulation.model.faults import load_catalogue

    for kind, ft in sorted(load_catalogue().items()):
        params = ", ".join(ft.params.model_fields)
        print(
            f"{kind:<20} [{ft.caught_by}] {ft.summary}"
            + (f"  (params: {params})" if params else "")
        )
    return 0


def _emulate(args: argparse.Namespace) -> int:
    if args.list_faults:
        return _list_faults()
    if args.clean:
        from labtest import runs

        line = runs.reap(report=False).line()
        print(line or f"labtest: no leftovers of dead runs (records: {runs.state_dir()})")
        return 0
    if args.testbed is None:
        print("labtest emulate: a testbed file is required", file=sys.stderr)
        return 2
    from labtest.emulation.lab import EmulatedLab
    from labtest.emulation.written import FILE_NAME, OutError, out_file
    from labtest.errors import ConfigError
    from labtest.safefs import UnsafePath
    from labtest.testbed import load_testbed

    try:
        testbed = load_testbed(args.testbed)
    except ConfigError as exc:
        print("\n".join(exc.problems), file=sys.stderr)
        return 1
    faults = [parse_fault(f) for f in args.fault]
    try:
        out = out_file(args.out)
    except OutError as exc:
        print(f"labtest emulate: {exc}", file=sys.stderr)
        return 2
    if testbed.emulation is not None and testbed.emulation.backend == "kernel":
        from labtest.emulation.kernel import cli as kernel_cli

        done = threading.Event()
        stops = (signal.SIGINT, signal.SIGTERM)
        previous = {s: signal.signal(s, lambda *_: done.set()) for s in stops}
        try:
            return kernel_cli.run(testbed, out, _wait, done, args.duration_s, faults)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    lab = EmulatedLab(
        testbed,
        workdir=out.parent if out else None,
        time_scale=args.time_scale,
        faults=faults,
    )
    done = threading.Event()
    previous = {s: signal.signal(s, lambda *_: done.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            lab.start()
        except UnsafePath as exc:  # e.g. a known_hosts in the --out folder it did not write
            print(f"labtest emulate: {exc}", file=sys.stderr)
            return 1
        path = out or (lab._workdir() / FILE_NAME)
        try:  # the secrets/ beside it: 0700 whatever the umask, never a symlink
            path = lab.write_testbed(path)
        except UnsafePath as exc:
            print(f"labtest emulate: {exc}", file=sys.stderr)
            return 1
        _print_summary(lab, path)
        _wait(done, args.duration_s)
    finally:
        lab.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("emulated lab stopped", flush=True)
    return 0


def _wait(done: threading.Event, duration_s: float | None) -> None:
    """Wake often: the kernel may hand SIGINT to a server thread, and then a long
    ``Event.wait`` in the main thread would not return until its timeout."""
    deadline = None if duration_s is None else time.monotonic() + duration_s
    while not done.wait(SIGNAL_POLL_S):
        if deadline is not None and time.monotonic() >= deadline:
            return


def _print_summary(lab: EmulatedLab, path: Path) -> None:
    tb = lab.emulated_testbed()
    took = f" in {lab.start_s:.1f} s" if lab.start_s else ""
    print(f"emulated lab {tb.name!r} is up{took}; testbed: {path}", flush=True)
    for name, device in tb.devices.items():
        if name in lab.skipped:
            print(f"  {name:<10} not emulated: {lab.skipped[name]}")
            continue
        parts = []
        if device.ssh:
            pw = device.ssh.password.get_secret_value() if device.ssh.password else ""
            parts.append(
                f"ssh -p {device.ssh.port} {device.ssh.username}@127.0.0.1 (password {pw})"
            )
        if device.snmp:
            community = device.snmp.community.get_secret_value() if device.snmp.community else ""
            parts.append(f"snmp udp:127.0.0.1:{device.snmp.port} (v2c community {community})")
        if device.visa:
            parts.append(f"visa {device.visa.resource}")
        if "otg_location" in device.vars:
            parts.append(f"otg {device.vars['otg_location']}")
        print(f"  {name:<10} " + "; ".join(parts))
    print("Ctrl-C stops the lab.", flush=True)
