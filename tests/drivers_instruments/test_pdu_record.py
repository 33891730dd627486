"""``--record`` captures the PDU's SNMP traffic too (the PDU builds its transport via connect)."""

from __future__ import annotations

import json
from pathlib import Path

from instrument_helpers import FakeClock
from pydantic import SecretStr

from labtest import connect
from labtest.drivers.instruments.pdu import NUM_OUTLETS, OUTLET_COMMAND, Pdu
from labtest.emulation.pdu_mib import PduMib
from labtest.emulation.snmpagent import SnmpAgent
from labtest.testbed.model import Device, SnmpSettings

COMMUNITY = "pdu-record-community-5531"


def test_record_captures_the_pdu_reads_and_writes(tmp_path: Path, clock: FakeClock) -> None:
    mib = PduMib(outlets=4, load_w={2: 100.0}, voltage_v=230.0, reboot_duration_s=5.0,
                 clock=clock)
    settings = SnmpSettings(community=SecretStr(COMMUNITY), timeout_s=1.0, retries=0)
    connect.set_record_dir(tmp_path / "rec")
    try:
        with SnmpAgent(mib, community=COMMUNITY) as agent:
            device = Device(role="pdu", driver="pdu", address="127.0.0.1",
                            snmp=settings.model_copy(update={"port": agent.port}))
            pdu = Pdu("pdu1", device)
            try:
                assert pdu.outlets()[2].on
                pdu.set_outlet(2, False)
            finally:
                pdu.close()
    finally:
        connect.set_record_dir(None)
    assert (tmp_path / "rec").stat().st_mode & 0o777 == 0o700  # created private: device output
    lines = (tmp_path / "rec" / "pdu1.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    kinds = [e["kind"] for e in entries]
    assert "snmp-table" in kinds and "snmp-walk" in kinds and "snmp-get" in kinds
    assert {"kind": "snmp-set", "request": [f"{OUTLET_COMMAND}.2", 2]}.items() <= next(
        e for e in entries if e["kind"] == "snmp-set").items()
    assert any(e["request"] == [NUM_OUTLETS] for e in entries if e["kind"] == "snmp-get")
    assert COMMUNITY not in "\n".join(lines)
