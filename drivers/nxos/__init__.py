"""Cisco NX-OS switches (CLI over SSH).

Parsers live in ``parsers``; the driver class comes with the SSH transport.
"""
