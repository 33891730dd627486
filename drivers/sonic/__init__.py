"""SONiC switches (sonic-utilities CLI over SSH). Parsers first; the driver class lands with the transports."""
