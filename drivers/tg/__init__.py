"""Traffic generator drivers behind one OTG-shaped model (``labtest.capabilities.traffic``).

- ``scapy_tg.ScapyTrafficGenerator`` (driver ``scapy-tg``): raw sockets on the
  host's interfaces, veth in a network namespace included.
- ``snappi_tg.SnappiTrafficGenerator`` (driver ``snappi-tg``, extra ``snappi``):
  any Open Traffic Generator server: ixia-c, Keysight/Ixia hardware.
"""
