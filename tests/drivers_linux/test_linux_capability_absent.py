"""A host without RDMA or a readable module (a veth NIC, a VM) is a hole, not a broken lab:
the driver raises CapabilityAbsent naming the host, so the check is *not proven* there.
The refusals are the real tools' words (iproute2 6.1 and ethtool 6.1 on a veth, kernel lab)."""

from __future__ import annotations

from typing import Any

import pytest
from linux_fakes import linux_host

from labtest.drivers.linux.driver import LinuxHost
from labtest.drivers.linux.shell import ToolMissing
from labtest.errors import CapabilityAbsent, CommandFailed
from labtest.transports.ssh import CommandResult


class Runner:
    def __init__(self, answers: dict[str, tuple[str, str, int]]) -> None:
        self.answers = answers
        self.commands: list[str] = []

    def exec(self, command: str, timeout_s: float | None = None) -> CommandResult:
        self.commands.append(command)
        out, err, status = self.answers[command]
        return CommandResult(out, err, status, 0.0)

    def close(self) -> None:
        pass


def _host(answers: dict[str, tuple[str, str, int]]) -> LinuxHost:
    return linux_host(Runner(answers))


NO_NETLINK = ("", "Failed to open NETLINK_RDMA socket\n", 1)


def test_no_rdma_netlink_is_capability_absent_naming_the_host() -> None:
    host = _host({"rdma link show": NO_NETLINK})
    with pytest.raises(CapabilityAbsent, match="no RDMA device on host host1"):
        host.rdma_devices()


def test_an_empty_rdma_link_list_is_capability_absent() -> None:
    host = _host({"rdma link show": ("", "", 0)})
    with pytest.raises(CapabilityAbsent, match="lists none"):
        host.rdma_links()


def test_perftest_on_a_host_without_rdma_names_that_not_a_missing_tool() -> None:
    client = _host({"rdma link show": NO_NETLINK})
    with pytest.raises(CapabilityAbsent, match="host1"):
        client.run_bandwidth(client)
    assert client.shell.runner.commands == ["rdma link show"]  # type: ignore[attr-defined]


def test_ethtool_without_module_access_is_capability_absent() -> None:
    host = _host({"ethtool -m eth0": ("", "netlink error: Operation not supported\n", 1)})
    with pytest.raises(CapabilityAbsent, match="no pluggable module readable at host1:eth0"):
        host.module_dom()


def test_other_refusals_stay_broken() -> None:
    host = _host({
        "rdma link show": ("", "bash: line 1: rdma: command not found\n", 127),
        "ethtool -m eth0": ("", "netlink error: No such device\n", 1),
    })
    with pytest.raises(ToolMissing):
        host.rdma_links()
    with pytest.raises(CommandFailed) as info:
        host.module_dom()
    assert not isinstance(info.value, CapabilityAbsent)


def test_the_plugin_makes_an_absent_capability_a_skip_with_its_reason(pytester: Any) -> None:
    pytester.makepyfile(
        """
        from labtest.errors import CapabilityAbsent, CommandFailed

        def test_absent():
            raise CapabilityAbsent("host1", "no RDMA device on host host1")

        def test_refused():
            raise CommandFailed("host1", "'rdma link show' exited 1: something else")
        """
    )
    result = pytester.runpytest("-rs")
    outcomes = result.parseoutcomes()
    assert (outcomes.get("skipped"), outcomes.get("broken")) == (1, 1), outcomes
    result.stdout.fnmatch_lines(["*not proven: [[]host1[]] no RDMA device on host host1*"])
