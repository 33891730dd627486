"""The testbed ``labtest emulate`` writes (issue 39 item 5): valid from any path it was
started with and read from anywhere, ``--out`` a file or a folder, a bad ``--out`` refused
before any lab starts, and its secrets gone when the lab stops."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from labtest.emulation.kernel import cli as kernel_cli
from labtest.emulation.written import OutError, Secrets, out_file
from labtest.testbed import load_testbed

REPO = Path(__file__).resolve().parents[2]


def test_a_testbed_loaded_by_a_relative_path_is_written_with_absolute_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the kernel lab's file names limits and suite settings relative to itself; loaded as
    # 'testbeds/kernel/leafspine.yaml', the writer prefixed the folder a second time
    monkeypatch.chdir(REPO)
    tb = load_testbed("testbeds/kernel/leafspine.yaml", check_drivers=False)
    assert tb.limits is not None and tb.suite_settings is not None
    lab = types.SimpleNamespace(lab_testbed=lambda: tb)
    written, secrets = kernel_cli.write_testbed(lab, tmp_path / "emulated.yaml")  # type: ignore[arg-type]
    monkeypatch.chdir(tmp_path)  # read from elsewhere, as a user does
    again = load_testbed(written, check_drivers=False)
    assert again.limits == (REPO / tb.limits).resolve()
    assert again.suite_settings == (REPO / tb.suite_settings).resolve()
    secrets.remove()
    assert not (tmp_path / "secrets").exists()


def test_secrets_removed_are_only_the_ones_written(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir(mode=0o700)
    (tmp_path / "secrets" / "mine.txt").write_text("kept")
    secrets = Secrets(tmp_path / "lab.yaml")
    ref = secrets.put("leaf1.snmp.community", "s3cret")
    assert ref.startswith("${file:") and (tmp_path / "secrets" / "leaf1.snmp.community").is_file()
    secrets.remove()
    assert [p.name for p in (tmp_path / "secrets").iterdir()] == ["mine.txt"]


def test_out_may_be_a_file_or_a_folder_never_under_a_file(tmp_path: Path) -> None:
    assert out_file(tmp_path) == tmp_path / "emulated.yaml"
    assert out_file(tmp_path / "lab.yaml") == tmp_path / "lab.yaml"
    assert out_file(None) is None
    assert out_file(tmp_path / "new" / "lab.yaml") == tmp_path / "new" / "lab.yaml"
    (tmp_path / "file").write_text("")
    with pytest.raises(OutError, match="is not a folder"):
        out_file(tmp_path / "file" / "sub" / "lab.yaml")


def _emulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "labtest.cli", "emulate", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)


def test_emulate_into_an_existing_folder_writes_a_valid_testbed_and_takes_its_secrets_back(
        tmp_path: Path) -> None:
    done = _emulate("testbeds/emulated/leafspine.yaml", "--out", str(tmp_path),
                    "--duration-s", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    written = tmp_path / "emulated.yaml"
    assert f"testbed: {written}" in done.stdout, done.stdout
    doc = yaml.safe_load(written.read_text())
    assert Path(doc["limits"]).is_absolute() and Path(doc["limits"]).is_file()
    assert not (tmp_path / "secrets").exists(), "secrets of a stopped lab stayed"


def test_a_bad_out_is_refused_before_any_lab_starts(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    done = _emulate("testbeds/emulated/leafspine.yaml", "--out",
                    str(tmp_path / "file" / "lab.yaml"), "--duration-s", "1")
    assert done.returncode == 2 and "is not a folder" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "is up" not in done.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


class _FakeKernelLab:
    """What ``kernel_cli.run`` uses of a KernelLab, without namespaces: a testbed with an
    SNMP community to write as a secret, and a record of ``stop``."""

    def __init__(self, testbed: object, faults: object = ()) -> None:
        self.testbed = testbed
        self.stopped = False
        self.start_s = 0.1
        self.skipped: dict[str, str] = {}
        self.plan = types.SimpleNamespace(nodes={})

    def start(self) -> None:
        pass

    def lab_testbed(self) -> object:
        return self.testbed

    def stop(self) -> None:
        self.stopped = True


def test_the_kernel_labs_secrets_beside_out_go_when_it_stops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 39 item 5: the kernel lab's SNMP secrets beside --out FILE stayed after it stopped
    doc = yaml.safe_load((REPO / "testbeds" / "kernel" / "leafspine.yaml").read_text())
    doc.pop("emulation")
    doc.pop("limits")
    doc.pop("suite_settings")
    doc["devices"]["spine1"].update(address="127.0.0.1", snmp={"community": "s3cret-community"})
    source = tmp_path / "kernel.yaml"
    source.write_text(yaml.safe_dump(doc))
    testbed = load_testbed(source, check_drivers=False)
    labs: list[_FakeKernelLab] = []

    def make(tb: object, faults: object = ()) -> _FakeKernelLab:
        labs.append(_FakeKernelLab(tb, faults))
        return labs[-1]

    monkeypatch.setattr(kernel_cli, "KernelLab", make)
    out = tmp_path / "out" / "lab.yaml"
    while_up: list[str] = []

    def wait(done: object, duration_s: object) -> None:  # the lab is up: look beside --out
        while_up.extend(sorted(p.name for p in (out.parent / "secrets").iterdir()))
        assert "s3cret-community" not in out.read_text()

    out.parent.mkdir()
    assert kernel_cli.run(testbed, out, wait, None, 0.0, []) == 0
    assert while_up == ["spine1.snmp.community"]
    assert labs[0].stopped and out.is_file()
    assert not (out.parent / "secrets").exists(), "the stopped lab's secrets stayed"
