"""SONiC switches (sonic-utilities CLI over SSH).

Parsers live in ``parsers``; the driver class comes with the SSH transport.
"""
