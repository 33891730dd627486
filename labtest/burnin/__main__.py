"""``python -m labtest.burnin ARGS`` = ``labtest burnin ARGS`` (this subcommand alone)."""

from __future__ import annotations

import argparse
import sys

from labtest.burnin.cli import register


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="labtest")
    register(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args(["burnin", *(sys.argv[1:] if argv is None else argv)])
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
