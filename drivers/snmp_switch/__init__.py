"""Generic SNMP switch: standard MIBs only (SNMPv2-MIB, IF-MIB, LLDP-MIB, ENTITY(-SENSOR)-MIB)."""
