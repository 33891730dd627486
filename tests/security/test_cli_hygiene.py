"""Issue 37 items 7, 8 and 11: the doctor's and init's command-line edges.

7. A bad or busy ``--metrics-port`` is one line and exit 2, before any lab starts.
8. ``labtest doctor`` stopped by SIGTERM (systemd, a CI timeout) stops its lab and
   removes its temporary folder (the known_hosts and generated secrets), like Ctrl-C.
11. ``labtest init``'s next-step hint is a command that can be pasted: the
    project folder is shell-quoted.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labtest.cli import main

# --- item 7 ------------------------------------------------------------------------------


@pytest.mark.parametrize("port", ["70000", "0", "-1"])
def test_a_bad_metrics_port_is_one_line_and_exit_2(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--once", "--metrics-port", port]) == 2
    err = capsys.readouterr().err
    assert err == f"labtest doctor: --metrics-port {port}: not a TCP port (1-65535)\n"


def test_a_busy_metrics_port_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        began = time.monotonic()
        assert main(["doctor", "--once", "--metrics-port", str(port)]) == 2
        assert time.monotonic() - began < 5.0  # refused before the lab starts
    err = capsys.readouterr().err
    assert err == (f"labtest doctor: --metrics-port {port}: cannot listen on "
                   f"127.0.0.1:{port}: Address already in use\n")


# --- item 8 ------------------------------------------------------------------------------


def test_sigterm_stops_the_doctor_and_removes_its_temporary_known_hosts(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "labtest.cli", "doctor", "--interval", "1", "--poll-s", "0.5"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        known: list[Path] = []
        while not known and time.monotonic() < deadline and proc.poll() is None:
            known = list(tmp.glob("labtest-emulate-*/known_hosts"))
            time.sleep(0.2)
        assert known, "the doctor's emulated lab never wrote its known_hosts"
        assert proc.stdout is not None
        proc.stdout.readline()  # the first report: the doctor is watching
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM" in err
    assert list(tmp.glob("labtest-emulate-*")) == []


# --- item 11 -----------------------------------------------------------------------------


def test_init_quotes_the_project_folder_in_its_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "my lab; rm -rf ~"
    assert main(["init", str(folder)]) == 0
    hint = capsys.readouterr().out.strip().splitlines()[-1]
    assert hint == (f"labtest init: next: cd {shlex.quote(str(folder))} && "
                    "labtest run --suite site_optics")
    assert shlex.split(hint.split("next: ", 1)[1])[:2] == ["cd", str(folder)]
