"""What each SONiC command's output looks like, so ``labtest parse`` refuses a capture
pasted under another command by name (:func:`labtest.parsing.fingerprint`)."""

from __future__ import annotations

from labtest.drivers.sonic.parsers._common import DRIVER
from labtest.drivers.sonic.parsers.interfaces import COUNTERS_COMMANDS
from labtest.drivers.sonic.parsers.transceivers import EEPROM_COMMANDS
from labtest.parsing import fingerprint

# --- what each command's output looks like (labtest parse refuses another's) -----------

for _label, _pattern, _commands in (
    (
        "show platform summary",
        r"^Platform:\s*\S+\s*\n(?:.*\n)?HwSKU:",
        ("show platform summary",),
    ),
    (
        "show interfaces status",
        r"^\s*Interface\s+Lanes\s+Speed\s+MTU",
        ("show interfaces status", "show interface status"),
    ),
    (
        "show interfaces flap",
        r"^\s*Interface\s+Flap Count\s+Admin\s+Oper",
        ("show interfaces flap", "show interface flap"),
    ),
    (
        "show interfaces counters",
        r"^\s*IFACE\s+STATE\s+RX_(?:OK|ERR)\b",
        COUNTERS_COMMANDS,
    ),
    ("show pfc counters", r"^\s*Port (?:Rx|Tx)\s+PFC0", ("show pfc counters", "pfcstat")),
    (
        "show queue counters",
        r"^\s*Port\s+TxQ\s+(?:Counter|WredDrp|EcnMarked)/",
        ("show queue counters", "show queue wredcounters", "queuestat"),
    ),
    (
        "show interfaces counters fec-stats",
        r"^\s*IFACE\s+STATE\s+FEC_CORR",
        ("show interfaces counters fec-stats", "portstat -f"),
    ),
    (
        "show interfaces counters fec-histogram",
        r"^\s*(?:Symbol Errors Per Codeword|IFACE\s+STATE\s+BIN0|IFACE\s+BIN0)",
        ("show interfaces counters fec-histogram", "portstat -fh"),
    ),
    ("show lldp table", r"^\s*LocalPort\s+RemoteDevice", ("show lldp table",)),
    (
        "show pfcwd stats",
        r"^\s*QUEUE\s+STATUS\s+STORM",
        ("show pfcwd stats", "pfcwd show stats"),
    ),
    (
        "show pfcwd config",
        r"^\s*PORT\s+ACTION\s+DETECTION TIME",
        ("show pfcwd config", "pfcwd show config"),
    ),
    (
        "show interfaces transceiver eeprom",
        r"^\S+: SFP (?:EEPROM )?(?:is )?(?:not )?detected",
        EEPROM_COMMANDS,
    ),
    (
        "show interfaces transceiver pm",
        r"^\s*Parameter\s+Unit\s+Min\s+Avg\s+Max|Transceiver performance monitoring",
        ("show interfaces transceiver pm",),
    ),
    (
        "show interfaces prbs status",
        r"^Interface:\s*\S+\s*\|",
        ("show interfaces prbs status", "show interface prbs status"),
    ),
):
    fingerprint(DRIVER, _label, _pattern, *_commands)
fingerprint(DRIVER, "show version", r"^SONiC Software Version:", "show version", strength=2)
