"""``labtest run``: run the suites and print a verdict table (see ``labtest.run``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from labtest.run import (
    DEFAULT_RESULTS,
    EXIT_BROKEN,
    EXIT_OK,
    EXIT_USAGE,
    RunError,
    RunOptions,
    default_testbed,
    run,
    suite_folders,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ap = subparsers.add_parser(
        "run",
        help="run the suites (default: all, on the emulated leaf-spine lab) with a verdict table",
        description=(
            "Run the acceptance suites with pytest and print the verdict per suite. Suites: the "
            "built-in ones, those of installed packages (entry point group labtest.suites) and "
            "the folders under ./suites (--list shows them). Arguments after -- go to pytest "
            "(e.g. -- -k leaf1)."
        ),
    )
    ap.add_argument("--testbed", type=Path, default=None, metavar="FILE",
                    help="testbed YAML (default: ./testbed.yaml if there is one, else the "
                         "built-in emulated leaf-spine lab)")
    ap.add_argument("--list", action="store_true", help="list the suites found and exit")
    ap.add_argument("--emulate", action=argparse.BooleanOptionalAction, default=None,
                    help="run against the emulated lab built from the testbed (default: when "
                         "the testbed has an emulation: section; --no-emulate for the real lab)")
    ap.add_argument("--suite", action="append", default=[], metavar="NAME", dest="suites",
                    help="run only this suite family (repeatable; default: all)")
    ap.add_argument("--limits", type=Path, metavar="FILE",
                    help="limits profile (default: the testbed's limits:)")
    ap.add_argument("--alluredir", type=Path, default=DEFAULT_RESULTS, metavar="DIR",
                    help="results directory (emptied at the start; default reports/allure-results)")
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER,
                    help="after --: extra pytest arguments")
    ap.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    extra = list(args.pytest_args)
    if extra and extra[0] == "--":
        extra = extra[1:]
    if args.list:
        try:
            for name, folder in suite_folders().items():
                print(f"{name:<14} {folder}")
        except RunError as exc:
            print(f"labtest run: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    opts = RunOptions(
        testbed=args.testbed or default_testbed(),
        emulate=args.emulate,
        suites=list(args.suites),
        limits=args.limits,
        alluredir=args.alluredir,
        pytest_args=extra,
    )
    try:
        status = run(opts)
    except RunError as exc:
        print(f"labtest run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if status == EXIT_BROKEN:
        return status  # nothing was judged: no run to store
    from labtest.db.history import after_run  # the run history (docs/database.md)

    after_run(opts.alluredir, lambda line: print(line, file=sys.stderr))
    return status
