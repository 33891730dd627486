"""``labtest emulate`` for a testbed whose ``emulation.backend`` is ``kernel``."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from labtest import safefs
from labtest.emulation.kernel.lab import KernelLab, KernelLabUnavailable


def write_testbed(lab: KernelLab, path: Path) -> Path:
    """The lab's testbed as YAML; SNMP secrets go to 0600 files beside it (keys stay in the
    lab folder, which is removed when the lab stops)."""
    tb = lab.lab_testbed()
    secret_dir = safefs.private_dir(path.parent / "secrets", 0o700)  # never a planted link
    data = tb.model_dump(mode="json", exclude_none=True)
    data.pop("emulation", None)  # the written file describes the running lab itself
    if lab.testbed.limits is not None and lab.testbed.source is not None:
        data["limits"] = str((lab.testbed.source.parent / lab.testbed.limits).resolve())
    for name, device in tb.devices.items():
        if device.snmp is None:
            continue
        for key in ("community", "auth_key", "priv_key"):
            secret = getattr(device.snmp, key)
            if secret is None:
                continue
            f = secret_dir / f"{name}.snmp.{key}"
            safefs.create_private(f, (secret.get_secret_value() + "\n").encode(), 0o600)
            data["devices"][name]["snmp"][key] = f"${{file:{f.resolve()}}}"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


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
    try:
        try:
            path = write_testbed(lab, out or lab.workdir / "emulated.yaml")
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
        lab.stop()
    print("kernel lab stopped", flush=True)
    return 0
