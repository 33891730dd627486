"""The ``labtest`` command line.

Each subcommand lives in its own small function; later features (emulate,
report, burnin) register theirs in ``COMMANDS`` the same way.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from labtest import __version__
from labtest.errors import ConfigError, LabtestError


def _testbed_check(args: argparse.Namespace) -> int:
    from labtest.measure import load_limits
    from labtest.testbed import load_testbed

    try:
        tb = load_testbed(args.file)
    except ConfigError as exc:  # exit 2: the file is wrong, as for any usage error
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{exc.path}: {len(exc.problems)} error(s)", file=sys.stderr)
        return 2
    for warning in tb.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if tb.limits is not None:
        try:
            load_limits(tb.limits)
        except ConfigError as exc:
            print("\n".join(exc.problems), file=sys.stderr)
            return 2
    print(f"testbed {tb.name!r} ({args.file}): OK")
    if tb.description:
        print(f"  {tb.description}")
    roles = Counter(d.role for d in tb.devices.values())
    print(f"  devices: {len(tb.devices)}")
    for role, n in sorted(roles.items()):
        names = ", ".join(sorted(tb.by_role(role)))
        print(f"    {role:<15} {n:>3}  {names}")
    kinds = Counter(f"{lk.speed_gbps:g}G {lk.optic or ''}".strip() for lk in tb.links)
    print(f"  links: {len(tb.links)}  ({_counted(kinds)})" if kinds else "  links: 0")
    transports = Counter(t for d in tb.devices.values() for t in d.transports)
    print(f"  transports: {_counted(transports) or 'none'}")
    if tb.limits:
        print(f"  limits: {tb.limits}")
    if tb.emulation:
        em = tb.emulation
        faults = len(em.faults)
        print(f"  emulation: seed {em.seed}, time scale {em.time_scale:g}, {faults} fault(s)")
    return 0


def _counted(counts: Counter[str]) -> str:
    return ", ".join(f"{n}x {what}" for what, n in sorted(counts.items()))


def _parse(args: argparse.Namespace) -> int:
    from labtest.parsing import InputError, decode, lookup, read_input, to_jsonable

    try:
        fn = lookup(args.driver, args.command)
    except LookupError as exc:
        print(f"labtest parse: {exc}", file=sys.stderr)
        return 2
    try:
        if args.file == "-":
            text, warning = decode(sys.stdin.buffer.read(), "<stdin>")
        else:
            text, warning = read_input(args.file)
    except InputError as exc:
        print(f"labtest parse: {exc}", file=sys.stderr)
        return 2
    if warning:
        print(f"labtest parse: warning: {warning}", file=sys.stderr)
    try:
        record = fn(text)
    except LabtestError as exc:
        print(f"labtest parse: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(to_jsonable(record), indent=2))
    return 0


Handler = Callable[[argparse.Namespace], int]


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="labtest", description="Hardware-in-the-loop tests for AI-cluster networks."
    )
    ap.add_argument("--version", action="version", version=f"labtest {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    tb = sub.add_parser("testbed", help="work with testbed files")
    tb_sub = tb.add_subparsers(dest="tb_cmd", required=True, metavar="ACTION")
    check = tb_sub.add_parser("check", help="validate a testbed file and print a summary")
    check.add_argument("file", type=Path)
    check.set_defaults(handler=_testbed_check)

    parse = sub.add_parser("parse", help="parse captured device output into JSON")
    parse.add_argument("driver", help="driver family, e.g. sonic, eos, nxos, linux")
    parse.add_argument("command", help='the command as typed, e.g. "show pfc counters"')
    parse.add_argument("file", help="file with the captured output, or - for stdin")
    parse.set_defaults(handler=_parse)

    wanted = _command_in(argv)
    for name, (module_name, summary) in SUBCOMMANDS.items():
        if name != wanted:  # listed for --help; its module (and its imports) load on use
            sub.add_parser(name, help=summary)
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                raise
            continue  # that feature is not part of this build
        module.register(sub)
    return ap


def _command_in(argv: list[str] | None) -> str | None:
    """The subcommand named on the command line (its first word that is not an option)."""
    args = sys.argv[1:] if argv is None else argv
    return next((a for a in args if not a.startswith("-")), None)


#: subcommand -> (module with ``register(subparsers)``, one-line help). A subcommand lives
#: next to the feature it drives; only the one being run is imported, so start-up stays
#: quick (the burn-in and emulation modules pull in scipy and the fabric model).
SUBCOMMANDS = {
    "emulate": ("labtest.emulation.cli", "run an emulated lab built from a testbed file"),
    "report": ("labtest.reports.cli",
               "build the sign-off report (and Allure HTML) from a results directory"),
    "burnin": ("labtest.burnin.cli",
               "run a burn-in station: monitors, durable samples, resume, verdict per serial"),
    "run": ("labtest.runner_cli",
            "run the suites (default: all, on the emulated leaf-spine lab) with a verdict table"),
    "init": ("labtest.project",
             "start a lab project: testbed, limits, an example suite, pinned labtest"),
    "lease": ("labtest.db.lease_cli",
              "list the device leases of every runner, or release a run's devices"),
    "history": ("labtest.db.history_cli",
                "a serial's or a port's measurements across the runs labtest run stored"),
    "doctor": ("labtest.doctor.cli",
               "watch a running fabric and name the sick link, port or NIC"),
    "config": ("labtest.config_cli",
               "print each setting's effective value and where it came from"),
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser(argv).parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BrokenPipeError:  # the reader left (`| head`): stop quietly, not with a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
