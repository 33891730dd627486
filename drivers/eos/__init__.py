"""Arista EOS switches (CLI over SSH, ``| json`` preferred).

Parsers live in ``parsers``; the driver class comes with the SSH transport.
"""
