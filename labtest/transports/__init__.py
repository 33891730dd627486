"""Transports: SSH, SNMP, VISA and packets, each with timeouts and typed errors."""
