"""Issue 37 items 3 and 4: what an emulated lab writes on a shared machine.

Item 3: a lab a SIGKILL left behind keeps listening (until the next start reaps
it) — with credentials nobody else can know: generated for each run, and every
file holding one is 0600 in a 0700 folder (the kernel lab's folder itself is
0755: FRR's daemons read their configurations there).

Item 4: ``labtest emulate --out DIR/x.yaml`` writes the lab's host keys to
``DIR/known_hosts``; a known_hosts there that labtest did not write (a user's
own, a link to one) is never overwritten: the command refuses, in one line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from labtest.emulation.kernel import why_not
from labtest.emulation.lab import KNOWN_HOSTS_HEADER, EmulatedLab
from labtest.testbed import load_testbed

EMU_TESTBED = """\
name: tiny
devices:
  leaf1: {role: leaf, driver: sonic}
  leaf2: {role: leaf, driver: sonic}
links:
  - {a: "leaf1:Ethernet0", b: "leaf2:Ethernet0", speed_gbps: 400, optic: 400G-DR4}
"""

KERNEL_TESTBED = """\
name: sec-kernel
devices:
  leaf1: {role: leaf, driver: frr}
  host1: {role: host, driver: linux, vars: {netdev: eth0}}
links:
  - {a: "host1:eth0", b: "leaf1:Ethernet0", speed_gbps: 10}
emulation:
  backend: kernel
"""

USERS_KNOWN_HOSTS = "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwn+user+key\n"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def emulate(tmp_path: Path, out: Path) -> int:
    from labtest.cli import main

    tb = tmp_path / "tiny.yaml"
    tb.write_text(EMU_TESTBED)
    return main(["emulate", str(tb), "--out", str(out), "--duration-s", "0"])


# --- item 4: a known_hosts labtest did not write ------------------------------------------


def test_emulate_out_refuses_to_overwrite_a_users_known_hosts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ssh_dir = tmp_path / "dotssh"
    ssh_dir.mkdir()
    known = ssh_dir / "known_hosts"
    known.write_text(USERS_KNOWN_HOSTS)
    assert emulate(tmp_path, ssh_dir / "lab.yaml") == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err  # one line
    assert err.startswith(f"labtest emulate: refusing {known}: labtest did not write this")
    assert known.read_text() == USERS_KNOWN_HOSTS
    assert sorted(p.name for p in ssh_dir.iterdir()) == ["known_hosts"]  # nothing else written


def test_emulate_out_refuses_a_known_hosts_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim_known_hosts"
    victim.write_text(USERS_KNOWN_HOSTS)
    out = tmp_path / "emu"
    out.mkdir()
    (out / "known_hosts").symlink_to(victim)
    assert emulate(tmp_path, out / "lab.yaml") == 1
    assert "symbolic link" in capsys.readouterr().err
    assert victim.read_text() == USERS_KNOWN_HOSTS


def test_emulate_out_rewrites_its_own_known_hosts(tmp_path: Path) -> None:
    out = tmp_path / "emu" / "lab.yaml"
    assert emulate(tmp_path, out) == 0
    known = out.parent / "known_hosts"
    assert known.read_text().startswith(KNOWN_HOSTS_HEADER)
    first = known.read_text()
    assert emulate(tmp_path, out) == 0  # the next run in the same folder: its own file
    assert known.read_text().startswith(KNOWN_HOSTS_HEADER) and known.read_text() != first


def test_a_lab_given_a_folder_refuses_before_serving_anything(tmp_path: Path) -> None:
    from labtest.safefs import UnsafePath

    tb = tmp_path / "tiny.yaml"
    tb.write_text(EMU_TESTBED)
    (tmp_path / "known_hosts").write_text(USERS_KNOWN_HOSTS)
    lab = EmulatedLab(load_testbed(tb), workdir=tmp_path)
    with pytest.raises(UnsafePath):
        lab.start()
    assert not lab._devices  # no server was started, none is left listening


# --- item 3: per-run credentials, private files ----------------------------------------------


def _model_credentials(tmp_path: Path) -> set[str]:
    tb = tmp_path / "tiny.yaml"
    tb.write_text(EMU_TESTBED)
    with EmulatedLab(load_testbed(tb)) as testbed:
        found = set()
        for device in testbed.devices.values():
            found.add(device.ssh.password.get_secret_value())
            for key in ("community", "auth_key", "priv_key"):
                found.add(getattr(device.snmp, key).get_secret_value())
    return found


def test_model_lab_credentials_are_new_for_every_run(tmp_path: Path) -> None:
    first, second = _model_credentials(tmp_path), _model_credentials(tmp_path)
    assert len(first) == 8 and len(second) == 8  # 2 devices x (ssh, community, auth, priv)
    assert not first & second
    assert all(len(c) >= 16 for c in first)  # 12 random bytes, URL-safe


def _secret_files(root: Path, secrets: list[bytes]) -> dict[Path, int]:
    """Every file below ``root`` that holds one of ``secrets``, with its mode."""
    found = {}
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if any(s in data for s in secrets):
            found[path] = mode(path)
    return found


@pytest.mark.skipif(why_not() is not None, reason=f"kernel lab: {why_not()}")
def test_kernel_lab_secrets_are_per_run_and_0600_in_0700_folders(tmp_path: Path) -> None:
    from labtest.emulation.kernel import KernelLab
    from labtest.emulation.kernel import cli as kernel_cli
    from labtest.safefs import UnsafePath

    tb_path = tmp_path / "tb.yaml"
    tb_path.write_text(KERNEL_TESTBED)
    runs = []
    for _ in range(2):
        lab = KernelLab(load_testbed(tb_path))
        old = os.umask(0)  # what the runner's umask is must not matter
        try:
            lab.start()
        finally:
            os.umask(old)
        try:
            community, _user, auth, priv = lab._snmp["leaf1"]
            keys = [lab.client_key(), lab.node_dir("leaf1") / "secret" / "ssh_host_ed25519_key",
                    lab.node_dir("host1") / "secret" / "ssh_host_ed25519_key"]
            private = [k.read_bytes().split(b"\n")[3] for k in keys]  # a random line of each
            secrets = [community.encode(), auth.encode(), priv.encode(), *private]
            holders = _secret_files(lab.workdir, secrets)
            assert set(keys) <= set(holders)
            assert any(p.name == "snmpd.conf" for p in holders)
            for path, path_mode in holders.items():
                assert path_mode == 0o600, f"{path} is {path_mode:o}"
                assert mode(path.parent) == 0o700, f"{path.parent} is {mode(path.parent):o}"
            # the testbed 'labtest emulate' writes: secrets beside it, 0600 in 0700
            out = tmp_path / f"out{len(runs)}" / "kernel.yaml"
            old = os.umask(0)
            try:
                kernel_cli.write_testbed(lab, out)
            finally:
                os.umask(old)
            files = list((out.parent / "secrets").iterdir())
            assert files and mode(out.parent / "secrets") == 0o700
            assert all(mode(f) == 0o600 for f in files)
            planted = tmp_path / "planted"
            planted.mkdir(exist_ok=True)
            (tmp_path / "trap").mkdir(exist_ok=True)
            trap = tmp_path / "trap" / "secrets"
            if not trap.is_symlink():
                trap.symlink_to(planted)
            with pytest.raises(UnsafePath):
                kernel_cli.write_testbed(lab, tmp_path / "trap" / "kernel.yaml")
            assert list(planted.iterdir()) == []
            runs.append({*secrets, *(k.read_bytes() for k in keys)})
        finally:
            lab.stop()
    assert not runs[0] & runs[1]  # nothing carried over from one run to the next
