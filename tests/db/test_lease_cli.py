"""``labtest lease list|release`` on both backends."""

from __future__ import annotations

import pytest

from labtest import reservation as r
from labtest.cli import main

KEYS = {"ssh://10.7.0.1:22": "lab3/leaf1", "snmp://10.7.0.2:161": "lab3/spine1"}


def test_list_shows_every_holder_and_release_frees_them(backend: str, capsys) -> None:
    store = r.open_store(backend)
    lease = r.reserve(KEYS, store=store, run_id="3f9c0a1b2d4e", host="ci-07", ttl_s=60)
    try:
        assert main(["lease", "list", "--store", backend]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0].split() == ["DEVICE", "HOLDER", "RUN", "SINCE", "EXPIRES"]
        assert [line.split()[0] for line in out[1:]] == ["lab3/leaf1", "lab3/spine1"]
        assert all("3f9c0a1b2d4e" in line and "@ci-07 pid" in line for line in out[1:])
        assert main(["lease", "release", "nobody", "--store", backend]) == 1
        assert main(["lease", "release", "3f9c0a1b2d4e", "--store", backend]) == 0
        assert "released 2 device(s)" in capsys.readouterr().out
        assert main(["lease", "list", "--store", backend]) == 0
        assert capsys.readouterr().out.strip() == "no device is held"
        with pytest.raises(r.LeaseLost):
            lease.confirm()
    finally:
        lease.release()
        if hasattr(store, "close"):
            store.close()


def test_an_unreachable_server_is_one_line_exit_2(capsys) -> None:
    url = "postgresql://labtest@127.0.0.1:1/none?connect_timeout=2"
    pytest.importorskip("psycopg", reason="needs psycopg: pip install 'labtest[postgres]'")
    assert main(["lease", "list", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("labtest lease: [postgresql://labtest@127.0.0.1:1/none")
    assert "cannot connect" in err and len(err.strip().splitlines()) == 1
