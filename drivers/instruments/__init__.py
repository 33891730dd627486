"""Lab instrument drivers: SCPI over VISA (power meter, VOA, optical switch, BERT, chamber)
and a PDU over SNMP. Each module names the instrument family whose programming guide
(or MIB) its command set follows; ``scpi`` is the small declarative layer they share.
See ``docs/instruments.md``."""
