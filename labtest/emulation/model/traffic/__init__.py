"""The traffic half of the fabric model: forwarding, congestion, RoCE, collectives, TG flows.

The core's ``Fabric`` builds ``TrafficModel(testbed, links, rng)`` as
``fabric.traffic`` and advances it with its clock; ``LinkView`` is what this
half reads from the physical half. Its faults (``faults``) are registered with the
others by ``load_catalogue`` (``labtest.emulation.model.faults.FAULT_MODULES``).
"""

from labtest.emulation.model.traffic.model import TrafficModel
from labtest.emulation.model.traffic.tgflows import TgFlowMetrics, TgFlowSpec
from labtest.emulation.model.traffic.topology import LinkView

__all__ = ["LinkView", "TgFlowMetrics", "TgFlowSpec", "TrafficModel"]
