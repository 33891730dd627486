"""Issue 37 item 1: a sign-off bundle holds only files the run wrote inside its results.

A results directory is input (another user, a plugin or a hand-made file may
have written it). An attachment whose ``source`` is absolute or climbs out with
``..``, or a file in the results that is a symbolic link (to ``/etc/shadow``, to a
private key), must not put that file's bytes into the world-readable bundle:
not in ``evidence/``, not inlined in ``signoff.html``, not in the Allure report.
Each refusal is named in a message; nothing else changes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from labtest import safefs
from labtest.cli import main
from labtest.reports import RESULTS_FILE, signoff

SECRET = "TOPSECRET-root-hash-$6$abc"  # what /etc/shadow would hold


def _test(nodeid: str, outcome: str, attachments: list[dict[str, str]]) -> dict[str, object]:
    return {
        "nodeid": nodeid, "name": nodeid.split("::")[-1], "suite": "sec", "plan_ids": [],
        "outcome": outcome, "category": "infrastructure" if outcome == "broken" else None,
        "message": "labtest.errors.TransportTimeout: [sw1] no answer", "device": "sw1",
        "skip_reason": None, "emulation_deviation": None, "duration_s": 0.1,
        "measurements": [], "not_proven": [], "labels": {}, "attachments": attachments,
    }


def make_results(root: Path, attachments: list[dict[str, str]]) -> Path:
    """A results directory with one broken test carrying ``attachments``, and a raw file."""
    results = root / "results"
    results.mkdir()
    (results / "ok-attachment.txt").write_text("show version: SONiC 202311\n")
    doc = {
        "schema": "labtest-results/1",
        "run": {"started_utc": "2026-01-01T00:00:00+00:00", "finished_utc": "2026-01-01T00:01:00",
                "user": "t", "host": "h", "labtest_version": "0", "python": "3", "pytest": "9",
                "args": [], "emulated": False},
        "testbed": None,
        "limits": None, "inventory": {}, "inventory_error": None,
        "tests": [_test("test_sec.py::test_reach", "broken", attachments)],
        "requirements": [], "requirements_errors": [],
    }
    (results / RESULTS_FILE).write_text(json.dumps(doc))
    return results


def att(name: str, source: str) -> dict[str, str]:
    return {"name": name, "source": source, "type": "text/plain"}


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    (tmp_path / "secret").mkdir()
    path = tmp_path / "secret" / "shadow"  # OUT/evidence/../../secret/shadow
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    return path


def bundle_bytes(out: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file())


@pytest.mark.parametrize(
    "source",
    ["ABSOLUTE", "../../secret/shadow", "sub/../../../secret/shadow", "./../../secret/shadow"],
)
def test_an_attachment_source_outside_the_results_is_refused(
    tmp_path: Path, victim: Path, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(victim) if source == "ABSOLUTE" else source
    results = make_results(tmp_path, [att("raw (sw1)", "ok-attachment.txt"),
                                      att("stolen", source)])
    out = tmp_path / "signoff"
    assert main(["report", str(results), "-o", str(out), "--no-allure"]) == 6  # INCOMPLETE
    err = capsys.readouterr().err
    assert f"refused {source}: attachment 'stolen' of test_sec.py::test_reach" in err
    assert "not in the bundle" in err
    assert SECRET.encode() not in bundle_bytes(out)
    html = (out / "signoff.html").read_text()
    assert "SONiC 202311" in html  # the legitimate attachment is still inlined
    doc = json.loads((out / "signoff.json").read_text())
    assert [r["path"] for r in doc["refused"]] == [source]
    assert [a["name"] for a in doc["attention"][0]["attachments"]] == ["raw (sw1)"]


def test_a_symlinked_attachment_file_is_not_copied_nor_inlined(
    tmp_path: Path, victim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reproduction: the attachment's name is fine, the file is a link to a victim."""
    results = make_results(tmp_path, [att("raw (sw1)", "link-attachment.txt")])
    (results / "link-attachment.txt").symlink_to(victim)
    (results / "linked-dir").symlink_to(victim.parent)  # a folder link: not walked either
    out = tmp_path / "signoff"
    main(["report", str(results), "-o", str(out), "--no-allure"])
    err = capsys.readouterr().err
    assert f"refused {results / 'link-attachment.txt'}: a symbolic link" in err
    assert f"refused {results / 'linked-dir'}: a symbolic link" in err
    assert SECRET.encode() not in bundle_bytes(out)
    assert not (out / "evidence" / "link-attachment.txt").exists()
    assert not (out / "evidence" / "linked-dir").exists()
    assert "link-attachment.txt" in (out / "signoff.html").read_text()  # named as refused
    assert signoff.verify(out) == []


def test_a_symlink_inside_the_results_pointing_inside_is_refused_too(tmp_path: Path) -> None:
    """No link is followed at all: which file a link names can change after the check."""
    results = make_results(tmp_path, [])
    (results / "alias.txt").symlink_to(results / "ok-attachment.txt")
    refused = signoff.copy_evidence(results, tmp_path / "evidence")
    assert [Path(r["path"]).name for r in refused] == ["alias.txt"]
    assert sorted(p.name for p in (tmp_path / "evidence").iterdir()) == [
        RESULTS_FILE, "ok-attachment.txt"]


def test_a_fifo_in_the_results_is_refused_without_blocking(tmp_path: Path) -> None:
    results = make_results(tmp_path, [])
    os.mkfifo(results / "pipe-attachment.txt")
    refused = signoff.copy_evidence(results, tmp_path / "evidence")
    assert refused == [{"path": str(results / "pipe-attachment.txt"),
                        "problem": "not a regular file"}]


def test_a_symlinked_results_file_is_refused(tmp_path: Path, victim: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    results = make_results(tmp_path, [])
    fake = tmp_path / "fake.json"
    (results / RESULTS_FILE).rename(fake)
    (results / RESULTS_FILE).symlink_to(fake)
    assert main(["report", str(results), "-o", str(tmp_path / "out"), "--no-allure"]) == 2
    assert "refused: a symbolic link" in capsys.readouterr().err


def test_the_html_never_reads_through_a_link_planted_in_the_evidence(
    tmp_path: Path, victim: Path
) -> None:
    """Defence in depth: the inliner itself reads only regular files inside evidence/."""
    from labtest.reports.signoff_html import _inline_evidence

    evidence = tmp_path / "evidence"
    evidence.mkdir()
    (evidence / "a.txt").symlink_to(victim)
    for source in ("a.txt", str(victim), "../secret/shadow"):
        assert SECRET not in _inline_evidence([att("x", source)], tmp_path)


@pytest.mark.parametrize("rel", ["", "/etc/shadow", "..", "a/../../b", "a\\..\\b", "a\0b", "."])
def test_inside_refuses_every_path_that_can_leave_its_root(rel: str) -> None:
    with pytest.raises(safefs.UnsafePath):
        safefs.inside(rel)


def test_inside_accepts_plain_relative_paths() -> None:
    assert safefs.inside("a/./b.txt") == ("a", "b.txt")
    assert safefs.inside("x-attachment.png") == ("x-attachment.png",)
