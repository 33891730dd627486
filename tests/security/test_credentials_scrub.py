"""Issue 37 item 2: a password written in a URL or a connection string is never printed.

``display_url`` masked only ``user:PASSWORD@``; ``?password=``, ``sslpassword=``
and libpq's ``password=X host=Y`` went out in clear in messages and resume hints.
Now one scrubber (:func:`labtest.secrets.redact`, which ``display_url``, the log
filter, every report file, Allure's writer and the sign-off use) masks every
form, and the password is registered so a driver error echoing it is scrubbed too.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from labtest import secrets
from labtest.db import display_url

PW = "s3cr3t-Pw"

MASKED = [
    # (written, shown)
    (f"postgresql://lab:{PW}@db.lab:5432/labtest",
     "postgresql://lab:********@db.lab:5432/labtest"),
    (f"postgres://lab:{PW}@db/x?sslmode=require", "postgres://lab:********@db/x?sslmode=require"),
    (f"postgresql://lab@db/x?password={PW}&sslmode=require",
     "postgresql://lab@db/x?password=********&sslmode=require"),
    (f"postgresql://db/x?sslmode=verify-full&sslpassword={PW}",
     "postgresql://db/x?sslmode=verify-full&sslpassword=********"),
    (f"postgresql://db/x?PassWord={PW}", "postgresql://db/x?PassWord=********"),
    (f"host=db port=5432 password={PW} user=lab", "host=db port=5432 password=******** user=lab"),
    (f"host=db password = '{PW} with space' user=lab", "host=db password = ******** user=lab"),
    (f"dbname=x sslpassword={PW}", "dbname=x sslpassword=********"),
    (f"PGPASSWORD={PW} psql -h db", "PGPASSWORD=******** psql -h db"),
    (f"labtest burnin --db-password={PW}", "labtest burnin --db-password=********"),
    (f"redis://:{PW}@cache:6379/0", "redis://:********@cache:6379/0"),
    (f"https://ci:{PW}@git.lab/repo.git", "https://ci:********@git.lab/repo.git"),
    ("postgresql://u:p%40ss%2Fw@h/db", "postgresql://u:********@h/db"),
    (f"client_secret={PW}&access_token={PW}x", "client_secret=********&access_token=********"),
]

UNCHANGED = [
    "postgresql://lab@db.lab:5432/labtest",
    "postgresql://db/x?passfile=/home/lab/.pgpass&sslmode=require",  # a path, not a secret
    "http://127.0.0.1:8080/metrics?job=doctor",
    "ssh://admin@10.0.0.1:22",
    "4 passed=3 failed=0 tokens=12",
    "/var/lib/labtest/history.db",
]


@pytest.mark.parametrize(("written", "shown"), MASKED)
def test_display_url_masks_every_password_form(written: str, shown: str) -> None:
    assert display_url(written) == shown


@pytest.mark.parametrize("text", UNCHANGED)
def test_what_is_not_a_password_is_left_alone(text: str) -> None:
    assert display_url(text) == text


@pytest.mark.parametrize(("written", "shown"), MASKED)
def test_redact_and_redact_bytes_mask_them_in_any_text(written: str, shown: str) -> None:
    line = f"labtest burnin: resume with --db {written} (run 12)"
    assert secrets.redact(line) == f"labtest burnin: resume with --db {shown} (run 12)"
    assert secrets.redact_bytes(line.encode()) == secrets.redact(line).encode()


def test_the_password_is_registered_so_an_echo_of_it_alone_is_scrubbed() -> None:
    echo_pw = "Echo-9f2c71"
    display_url(f"host=db password={echo_pw}")
    # a driver message that quotes the value without its key
    assert echo_pw not in secrets.redact(f'invalid value "{echo_pw}" in connection string')
    quoted = "q'uo ted-77"
    display_url("host=db password='q\\'uo ted-77'")
    assert quoted not in secrets.redact(f"bad: {quoted}")


def test_logs_are_scrubbed_of_url_passwords(caplog: pytest.LogCaptureFixture) -> None:
    secrets.install_log_redaction()
    with caplog.at_level(logging.INFO, logger="labtest.test"):
        logging.getLogger("labtest.test").info(
            "opening %s", f"postgresql://u@db/x?sslpassword={PW}")
    assert PW not in caplog.text
    assert "sslpassword=********" in caplog.text


def test_report_files_are_scrubbed_of_url_passwords(tmp_path: Path) -> None:
    from labtest.reports.files import write_atomic

    write_atomic(tmp_path / "r.json", f'{{"args": ["--db", "postgresql://u:{PW}@h/db"]}}')
    assert PW not in (tmp_path / "r.json").read_text()


def test_allure_attachments_are_scrubbed_of_url_passwords(tmp_path: Path) -> None:
    pytest.importorskip("allure_commons")
    from allure_commons.logger import AllureFileLogger

    from labtest.reports import scrub

    scrub.install_allure()
    AllureFileLogger(str(tmp_path)).report_attached_data(
        f"dsn: host=db password={PW}".encode(), "a-attachment.txt")
    assert PW.encode() not in (tmp_path / "a-attachment.txt").read_bytes()


@pytest.mark.parametrize(
    "url",
    [f"postgresql://u:{PW}@127.0.0.1:1/db?sslpassword={PW}2",
     f"postgresql://u@127.0.0.1:1/db?password={PW}"],
)
def test_cli_messages_and_hints_never_carry_the_password(url: str) -> None:
    pytest.importorskip("psycopg")
    for argv in (["history", "--db", url, "SER1"], ["lease", "list"]):
        proc = subprocess.run(
            [sys.executable, "-m", "labtest.cli", *argv], capture_output=True, text=True,
            timeout=60, env={"LABTEST_DB": url, "PATH": "/usr/bin:/bin"}, check=False,
        )
        out = proc.stdout + proc.stderr
        assert "127.0.0.1:1" in out and "cannot connect" in out, out  # the URL is named
        assert PW not in out, out


def test_a_non_postgres_history_location_is_scrubbed_too(capsys) -> None:
    from labtest.cli import main

    assert main(["history", "--db", f"host=db password={PW}", "SER1"]) == 2
    err = capsys.readouterr().err
    assert PW not in err and "password=********" in err


def test_unknown_lease_store_scheme_message_is_scrubbed() -> None:
    from labtest import reservation

    with pytest.raises(ValueError) as info:
        reservation.open_store(f"nosuch://u:{PW}@h/x")
    assert PW not in str(info.value)


def test_scrubbing_grows_linearly_with_the_text() -> None:
    """No pattern backtracks over a large attachment (a ReDoS would hang the report): four
    times the text takes about four times as long, where a quadratic scan takes sixteen.
    A ratio of the best of three runs each, measured in one process, not a wall-clock bound:
    a loaded machine slows both sizes alike (3.4x here, alone or beside the matrix)."""
    import time

    def best_s(units: int) -> float:
        text = ("a=b key=c " * units) + "://" * (units // 40) + "@"
        runs = []
        for _ in range(3):
            began = time.perf_counter()
            secrets.redact(text)
            secrets.redact_bytes(text.encode())
            runs.append(time.perf_counter() - began)
        return min(runs)

    small, large = best_s(50_000), best_s(200_000)
    assert large / small < 8.0, f"4x the text took {large / small:.1f}x as long"
