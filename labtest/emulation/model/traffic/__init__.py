"""The traffic half of the fabric model: forwarding, congestion, RoCE, collectives, TG flows.

The core's ``Fabric`` builds ``TrafficModel(testbed, links, rng)`` as
``fabric.traffic`` and advances it with its clock; ``LinkView`` is what this
half reads from the physical half. Importing the package registers the
traffic faults in the shared catalogue.
"""

from labtest.emulation.model.traffic import faults as _faults  # noqa: F401  (registers faults)
from labtest.emulation.model.traffic.model import TrafficModel
from labtest.emulation.model.traffic.tgflows import TgFlowMetrics, TgFlowSpec
from labtest.emulation.model.traffic.topology import LinkView

__all__ = ["LinkView", "TgFlowMetrics", "TgFlowSpec", "TrafficModel"]
