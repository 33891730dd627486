"""Cisco NX-OS switches (CLI over SSH). Parsers first; the driver class lands with the transports."""
