"""Issue 16, as a hostile local user would try it: nothing outside our own files is touched.

Each test plants what another user of a shared lab host could plant (a row in
the lease database, a symlink or a foreign directory in ``$TMPDIR``, a secret in
an exception message) and checks that labtest refuses it or ignores it.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import tempfile
import uuid
from pathlib import Path

import pytest

import labtest.emulation.lab  # noqa: F401 - imported at collection: numpy's C parts load once
from labtest import reservation as r
from labtest import safefs

SW1 = {"ssh://10.9.9.1:22": "lab/sw1"}
OTHER_UID = 4242  # a user that is not us (the tests run as root and chown to it)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private ``$TMPDIR`` (sticky and world-writable, as /tmp is) for the shared lease dir."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.delenv(safefs.ENV_GROUP, raising=False)
    return tmp


# --- finding 1: a world-writable lease DB whose rows name files to delete ------------------


def test_a_new_lease_store_is_private(tmpdir_env: Path) -> None:
    store = r.open_store()
    assert store.path == tmpdir_env / "labtest-leases" / "leases.db"
    assert mode(store.path) == 0o600
    assert mode(store.path.parent) == 0o700
    with r.reserve(SW1, store=store, wait_s=0) as lease:
        assert lease.member.lock_path.parent == store.path.parent
        assert mode(lease.member.lock_path) == 0o600


def test_a_lock_path_in_the_database_never_deletes_a_victim_file(tmpdir_env: Path) -> None:
    """The reproduction: a member row on this host whose lock_path is a victim file."""
    victim = tmpdir_env.parent / "victim.txt"
    victim.write_text("precious")
    store = r.open_store()
    with sqlite3.connect(store.path) as db:  # what any writer of the 0666 database could do
        for member_id in (uuid.uuid4().hex, "../../victim"):
            db.execute(
                "INSERT INTO members VALUES (?, 'evil', 'mallory', ?, 1, 0, 9e12, ?)",
                (member_id, socket.gethostname(), str(victim)),
            )
    with r.reserve(SW1, store=store, wait_s=0):
        pass
    assert victim.read_text() == "precious"
    # a derived lock path is a hex id under the store's own directory, nothing else
    with pytest.raises(ValueError):
        r.member_lock_path("../../victim")


@needs_root
def test_a_world_writable_or_foreign_lease_db_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "leases.db"
    r.SqliteLeaseStore(db)
    os.chown(db, OTHER_UID, OTHER_UID)
    db.chmod(0o666)
    with pytest.raises(r.StoreUnusable, match=r"writable by every user|belongs to uid 4242"):
        r.SqliteLeaseStore(db)
    assert mode(db) == 0o666  # not ours: refused, not "repaired"
    os.chown(db, os.geteuid(), os.getegid())  # ours but 0666: repaired
    r.SqliteLeaseStore(db)
    assert mode(db) == 0o600


@needs_root
def test_a_lease_db_in_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, OTHER_UID, OTHER_UID)
    shared.chmod(0o777)
    with pytest.raises(r.StoreUnusable, match="unsafe lease store"):
        r.SqliteLeaseStore(shared / "leases.db")
    assert not (shared / "leases.db").exists()


def test_a_planted_symlink_at_the_db_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.db"
    victim.write_text("not yours")
    (tmp_path / "leases.db").symlink_to(victim)
    with pytest.raises(r.StoreUnusable):
        r.SqliteLeaseStore(tmp_path / "leases.db")
    assert victim.read_text() == "not yours"


def test_a_corrupt_lease_db_is_one_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "leases.db"
    db.write_bytes(b"garbage" * 500)
    db.chmod(0o600)
    with pytest.raises(r.StoreUnusable, match="corrupt") as err:
        r.SqliteLeaseStore(db)
    assert "\n" not in str(err.value)


# --- finding 2: a planted symlink at $TMPDIR/labtest-leases ---------------------------------


def test_a_planted_symlink_at_the_lease_dir_is_refused_not_chmod_ed(tmpdir_env: Path) -> None:
    target = tmpdir_env.parent / "target"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (tmpdir_env / "labtest-leases").symlink_to(target)
    with pytest.raises(r.StoreUnusable, match="symbolic link"):
        r.open_store()
    with pytest.raises(r.StoreUnusable, match="symbolic link"):
        r.reserve(SW1, store=r.SqliteLeaseStore(tmpdir_env.parent / "own.db"), wait_s=0)
    assert mode(target) == 0o755
    assert list(target.iterdir()) == []


@needs_root
def test_a_foreign_lease_dir_is_refused(tmpdir_env: Path) -> None:
    planted = tmpdir_env / "labtest-leases"
    planted.mkdir()
    os.chown(planted, OTHER_UID, OTHER_UID)
    planted.chmod(0o777)
    with pytest.raises(r.StoreUnusable, match=r"belongs to uid 4242|writable by every user"):
        r.open_store()
    assert mode(planted) == 0o777 and list(planted.iterdir()) == []


def test_our_own_lease_dir_left_1777_by_an_old_version_is_made_private(tmpdir_env: Path) -> None:
    old = tmpdir_env / "labtest-leases"
    old.mkdir()
    old.chmod(0o1777)
    r.open_store()
    assert mode(old) == 0o700


@needs_root
def test_a_lab_group_shares_the_lease_dir(tmpdir_env: Path, monkeypatch) -> None:
    monkeypatch.setenv(safefs.ENV_GROUP, "4243")
    store = r.open_store()
    st_dir, st_db = os.stat(store.path.parent), os.stat(store.path)
    assert (st_dir.st_gid, stat.S_IMODE(st_dir.st_mode)) == (4243, 0o2770)
    assert (st_db.st_gid, stat.S_IMODE(st_db.st_mode)) == (4243, 0o660)
    # a lab member's (another uid's) directory in the lab group is accepted
    os.chown(store.path.parent, OTHER_UID, 4243)
    r.open_store()


# --- safefs itself, under a careless umask -------------------------------------------------


def test_private_dirs_and_files_ignore_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        made = safefs.private_dir(tmp_path / "a" / "b")
        safefs.create_private(made / "f", b"x")
    finally:
        os.umask(old)
    assert mode(tmp_path / "a") == 0o700 and mode(made) == 0o700
    assert mode(made / "f") == 0o600


# --- finding 3: a password in an exception message reaches Allure and the evidence ----------

PW = "Sec-Finding3-Pw-4417"
SECRET_TESTBED = """\
name: sec
devices:
  sw1:
    role: leaf
    driver: sonic
    address: 127.0.0.1
    ssh: {port: 9, username: admin, password: "${env:LT_SEC_PW}"}
"""


def test_a_password_in_an_exception_message_reaches_no_result_and_no_evidence(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from labtest.reports import signoff

    monkeypatch.setenv("LT_SEC_PW", PW)
    pytester.makefile(".yaml", tb=SECRET_TESTBED)
    pytester.makepyfile(test_said="""
        import os

        def test_device_said():
            raise RuntimeError("device said: " + os.environ["LT_SEC_PW"])
    """)
    result = pytester.runpytest_subprocess("--testbed", "tb.yaml", "--no-reserve",
                                           "--alluredir", "allure")
    result.assert_outcomes(failed=1)
    allure_dir = pytester.path / "allure"
    [found] = [p for p in allure_dir.glob("*-result.json")]
    status = json.loads(found.read_text())["statusDetails"]
    assert "device said: ********" in status["message"]
    assert PW not in status["message"] and PW not in status.get("trace", "")
    for path in allure_dir.rglob("*"):
        assert PW.encode() not in path.read_bytes(), path
    assert PW not in str(result.stdout) + str(result.stderr)
    # labtest report scrubs what it copies too (results of an older labtest, or a hand-made
    # attachment), for the secrets it knows
    from labtest import secrets

    secrets.register(PW)
    (allure_dir / "old-attachment.txt").write_text(f"password {PW}\n")
    bundle = signoff.build(allure_dir, tmp_path / "signoff")
    assert (bundle.out_dir / "evidence" / "old-attachment.txt").read_text() == "password ********\n"
    for path in bundle.out_dir.rglob("*"):
        if path.is_file():
            assert PW.encode() not in path.read_bytes(), path


# --- labtest emulate --out: the secrets folder --------------------------------------------

EMU_TESTBED = """\
name: tiny
devices:
  leaf1: {role: leaf, driver: sonic}
  leaf2: {role: leaf, driver: sonic}
links:
  - {a: "leaf1:Ethernet0", b: "leaf2:Ethernet0", speed_gbps: 400, optic: 400G-DR4}
"""


def emulate(tmp_path: Path, out: Path) -> int:
    from labtest.cli import main

    tb = tmp_path / "tiny.yaml"
    tb.write_text(EMU_TESTBED)
    return main(["emulate", str(tb), "--out", str(out), "--duration-s", "0"])


def test_emulate_out_writes_its_secrets_into_a_0700_folder_under_umask_000(
        tmp_path, monkeypatch) -> None:
    from labtest.emulation import written

    seen: dict[str, int] = {}
    remove = written.Secrets.remove

    def modes_then_remove(self: written.Secrets) -> None:  # read while the lab still runs
        seen.update({p.name: mode(p) for p in [self.folder, *self.folder.iterdir()]})
        remove(self)

    monkeypatch.setattr(written.Secrets, "remove", modes_then_remove)
    out = tmp_path / "emu" / "emulated.yaml"
    old = os.umask(0)
    try:
        assert emulate(tmp_path, out) == 0
    finally:
        os.umask(old)
    assert seen.pop("secrets") == 0o700
    assert seen and set(seen.values()) == {0o600}, seen
    assert not (out.parent / "secrets").exists()  # a stopped lab's secrets are gone


def test_emulate_out_refuses_a_planted_secrets_symlink(tmp_path, capsys) -> None:
    stolen = tmp_path / "stolen"
    stolen.mkdir()
    stolen.chmod(0o777)
    out = tmp_path / "emu" / "emulated.yaml"
    out.parent.mkdir()
    (out.parent / "secrets").symlink_to(stolen)
    assert emulate(tmp_path, out) == 1
    assert "symbolic link" in capsys.readouterr().err
    assert list(stolen.iterdir()) == [] and mode(stolen) == 0o777


def test_the_example_lab_checks_host_keys_strictly() -> None:
    from labtest.testbed import load_testbed

    root = Path(__file__).parents[2]
    tb = load_testbed(root / "testbeds" / "example-lab.yaml")
    policies = {name: d.ssh.host_key_policy for name, d in tb.devices.items() if d.ssh}
    assert policies and set(policies.values()) == {"reject"}, policies


# --- the burn-in database ----------------------------------------------------------------


def test_a_planted_symlink_at_the_burnin_db_is_refused(tmp_path: Path) -> None:
    from labtest.burnin.backends import open_store
    from labtest.burnin.store import StoreError

    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "b.db").symlink_to(victim)
    with pytest.raises(StoreError):
        open_store(tmp_path / "b.db")
    assert victim.read_text() == "keep"


def test_a_burnin_db_in_a_world_writable_directory_is_refused(tmp_path: Path) -> None:
    from labtest.burnin.backends import open_store
    from labtest.burnin.store import StoreError

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(StoreError, match="writable by every user"):
        open_store(shared / "b.db")
    assert list(shared.iterdir()) == []


def test_a_new_burnin_db_and_its_directories_are_private(tmp_path: Path) -> None:
    from labtest.burnin.backends import open_store

    old = os.umask(0)
    try:
        open_store(tmp_path / "new" / "dir" / "b.db").close()
    finally:
        os.umask(old)
    assert mode(tmp_path / "new") == 0o700 and mode(tmp_path / "new" / "dir") == 0o700
    assert mode(tmp_path / "new" / "dir" / "b.db") == 0o600
