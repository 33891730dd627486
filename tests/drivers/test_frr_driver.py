"""Linux + FRR driver end to end: SSH to a server answering with iproute2 JSON captured on
a veth pair (tests/kernel/samples), for the reads the link watchers depend on."""

from __future__ import annotations

from pathlib import Path

import pytest
from driver_harness import Script, driver_on

from drivers.common.cli import telling
from labtest.capabilities.switch import LinkFlapCounts, link_flap_counts
from labtest.emulation.sshserver import CliReply
from labtest.errors import CommandFailed, ServiceDown
from labtest.outcome import ErrorKind, classify

KERNEL_SAMPLES = Path(__file__).parents[1] / "kernel" / "samples"
STATS = "ip -s -s -j link show"


def shell_unknown(command: str) -> CliReply:
    return CliReply("", exit_status=127, stderr=f"sh: 1: {command.split()[0]}: not found\n")


def frr_script(stats: str) -> Script:
    return Script({STATS: (KERNEL_SAMPLES / stats).read_text()}, shell_unknown, prompt="$ ")


def test_link_status_changes_are_the_carrier_changes_counters_read(tmp_path) -> None:
    """LinkFlapCounts: the kernel's ``carrier_changes`` from the command counters() runs;
    a watcher holding the counters takes the count from them without a second command."""
    script = frr_script("ip_link_stats_ss_flapped.json")
    with driver_on(script, "frr", tmp_path) as frr:
        assert isinstance(frr, LinkFlapCounts)
        assert frr.link_status_changes() == {"Ethernet0": 4, "Ethernet4": 4}  # lo left out
        assert script.log == [STATS]
        counters = frr.counters()
        assert link_flap_counts(frr, counters) == {"Ethernet0": 4, "Ethernet4": 4}
        assert script.log == [STATS, STATS]


def test_stats_without_carrier_changes_give_no_count(tmp_path) -> None:
    # stats without carrier_changes (a single -s, standing in for an iproute2 that omits
    # it): the count is unknown, never 0
    script = frr_script("ip_link_stats.json")
    with driver_on(script, "frr", tmp_path) as frr:
        assert frr.link_status_changes() == {}
        assert link_flap_counts(frr) is None


def test_a_failed_command_says_why_past_a_harmless_first_line(tmp_path) -> None:
    # issue 39 item 4: vtysh prints its missing-config warning first and the cause last;
    # the error named only the first line
    script = frr_script("ip_link_stats.json")
    script.replies["vtysh -c 'show bgp summary json'"] = CliReply(
        "", exit_status=1,
        stderr="% Can't open configuration file /etc/frr/vtysh.conf due to 'No such file or "
               "directory'.\nbgpd is not running\n")
    with driver_on(script, "frr", tmp_path) as frr, pytest.raises(CommandFailed) as info:
        frr.bgp_sessions()
    assert "bgpd is not running" in str(info.value) and "vtysh.conf" in str(info.value)
    assert info.value.device == "sw1" and "bgpd is not running" in info.value.raw
    # the device said its daemon is dead: its own fault, judged a failure there (issue 39)
    assert isinstance(info.value, ServiceDown) and info.value.service == "bgpd"
    assert classify(info.value) is ErrorKind.ASSERTION


def test_a_long_failure_keeps_its_first_and_last_lines() -> None:
    lines = ["warning: first"] + [f"noise line {i:03d} " + "x" * 40 for i in range(40)]
    said = telling("\n".join([*lines, "the cause"]))
    assert said.startswith("warning: first / [") and said.endswith("/ the cause")
    assert len(said) <= 420 and "line(s)]" in said
    assert telling("\n\n") == "no output" and telling("a\na\nb") == "a / b"
