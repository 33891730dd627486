"""Shared by every test module: modules that must be imported once per process.

Child pytest sessions run in-process (pytester) restore ``sys.modules`` afterwards, so a
module first imported inside one is imported again later; numpy's C extensions refuse a
second load ("cannot load module more than once per process"). The testbed loader imports
the fault catalogue (numpy) for any testbed with faults, so it is imported here first.
"""

import labtest.emulation.model.faults  # noqa: F401
