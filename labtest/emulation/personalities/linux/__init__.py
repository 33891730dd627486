"""Linux RoCE host personality: a bash over SSH answering the tools a host driver runs.

One package, one module per concern: ``session`` (the bash session and ``serve``),
``bash`` (shell syntax), ``state`` (what a host keeps between sessions), ``nic``
(inventory and counters), ``runs`` (perftest and nccl-tests computed from the fabric)
and ``tools`` (how those tools print).

``serve(fabric, name, device)`` gives each host an SSH CLI whose sessions share
one :class:`HostState` (process table, files). A session reads a command line
with bash's syntax (``bash``) and runs what it names:

- inventory and counters, in the real tools' formats (``nic``):
  ``ip [-j] [-s] link|addr``, ``ethtool [-S|-m|-i|--show-fec] DEV``,
  ``rdma [-j] [-p] link|dev|statistic``, ``ibv_devinfo [-v] [-d DEV]``,
  ``ibv_devices``, ``show_gids``, ``show_counters``, sysfs under
  ``/sys/class/net`` and ``/sys/class/infiniband`` (``cat``, ``grep -H . DIR/*``);
- perftest ``ib_{write,read,send}_{bw,lat}`` as servers and clients, and
  nccl-tests through ``mpirun`` (``runs``, ``tools``);
- the process plumbing a driver needs around them: ``nohup``, ``stdbuf``,
  ``sudo``, ``timeout``, ``env``, redirections, ``&`` with ``$!``, ``ps``,
  ``pgrep``, ``pkill``, ``kill``, ``ss -ltn``, ``cat``, ``rm``, ``ls``,
  ``grep``/``head``/``tail``/``wc`` in pipelines, ``which``/``command -v``.

Anything else is ``bash: X: command not found`` (exit 127), as is every tool
listed in the device's ``vars.missing_tools`` (emulator-only knob). Other
emulator-only ``vars``: ``hostname``, ``perftest_out_json: false`` (a perftest
without ``--out_json``), ``nic_firmware``, ``gpu_model``, ``sudo_needs_password``.
The lab handles ``unreachable_device`` and the SSH server's ``drop`` mode.
"""

from labtest.emulation.personalities.linux.session import serve

__all__ = ["serve"]  # the lab's registration: ``labtest.emulation.personalities.linux:serve``
