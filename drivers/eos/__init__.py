"""Arista EOS switches (CLI over SSH, ``| json`` preferred). Parsers first; the driver class lands with the transports."""
