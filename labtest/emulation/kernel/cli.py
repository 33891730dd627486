"""``labtest emulate`` for a testbed whose ``emulation.backend`` is ``kernel``."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from labtest import interrupt, safefs
from labtest.emulation.kernel.lab import KernelLab, KernelLabUnavailable
from labtest.emulation.written import FILE_NAME, Secrets, absolute_paths


def write_testbed(lab: KernelLab, path: Path) -> tuple[Path, Secrets]:
    """The lab's testbed as YAML with absolute paths; its secrets go to 0600 files beside
    it (keys stay in the lab folder, which is removed when the lab stops)."""
    tb = lab.lab_testbed()
    secrets = Secrets(path)
    data = tb.model_dump(mode="json", exclude_none=True)
    data.pop("emulation", None)  # the written file describes the running lab itself
    absolute_paths(data)
    secrets.put_all(tb, data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path, secrets


def run(
    testbed: Any,
    out: Path | None,
    wait: Any,
    done: threading.Event,
    duration_s: float | None,
    faults: list[tuple[str, str, dict[str, Any]]],
) -> int:
    lab = KernelLab(testbed, faults=faults)
    try:
        lab.start()
    except KernelLabUnavailable as exc:
        print(f"labtest emulate: {exc}", file=sys.stderr)
        return 1
    secrets: Secrets | None = None
    try:
        try:
            path, secrets = write_testbed(lab, out or lab.workdir / FILE_NAME)
        except safefs.UnsafePath as exc:  # a planted or foreign secrets/ beside --out
            print(f"labtest emulate: {exc}", file=sys.stderr)
            return 1
        print(f"kernel lab {testbed.name!r} is up in {lab.start_s:.1f} s; testbed: {path}")
        for name, node in lab.plan.nodes.items():
            dev = lab.lab_testbed().devices[name]
            where = f"ip netns exec {node.netns} bash"
            ssh = f"; ssh -i {dev.ssh.key_file} -p {dev.ssh.port} root@127.0.0.1" if dev.ssh else ""
            print(f"  {name:<10} {node.kind:<6} {where}{ssh}")
        for name, why in lab.skipped.items():
            print(f"  {name:<10} not built: {why}")
        print("Ctrl-C stops the lab.", flush=True)
        wait(done, duration_s)
    finally:
        with interrupt.held("stopping the kernel lab"):
            lab.stop()
            if secrets is not None:
                secrets.remove()
    print("kernel lab stopped", flush=True)
    return 0
