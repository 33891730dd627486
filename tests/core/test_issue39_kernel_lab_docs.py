"""Issue 39 item 7: docs/kernel-lab.md's keep-it-up workflow and fault recipes stay usable.

The doc tells a user to keep the kernel lab up, run suites against the testbed it wrote,
and place faults by hand or by name (``--fault``). These tests hold the doc to the code:
every ``--fault`` example is one the testbed loader accepts for the kernel lab (its kind,
target and parameters), every kernel fault kind has its row, the workflow's ``labtest``
commands parse with labtest's own command line, and the hand recipes use what this kernel
has (nftables, tbf/htb), never ``netem``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from labtest.cli import build_parser
from labtest.emulation.cli import parse_fault
from labtest.emulation.kernel.faults import FAULTS
from labtest.errors import ConfigError
from labtest.testbed import load_testbed

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "kernel-lab.md").read_text()
KERNEL_TESTBED = ROOT / "testbeds" / "kernel" / "leafspine.yaml"


def _section(title: str) -> str:
    """The text of the ``## title`` section (up to the next ``## ``)."""
    start = DOC.index(f"\n## {title}")
    end = DOC.find("\n## ", start + 1)
    return DOC[start:end if end != -1 else len(DOC)]


def _fault_examples() -> list[str]:
    """Every ``--fault SPEC`` the doc shows (``...`` placeholders left out)."""
    found = re.findall(r"--fault[ =]([^\s`'\"]+)", DOC)
    return sorted({f for f in found if "..." not in f and "@" in f})


def _kernel_testbed_with(tmp_path: Path, faults: list[dict]) -> Path:
    doc = yaml.safe_load(KERNEL_TESTBED.read_text())
    for key in ("limits", "suite_settings"):  # the copy lives elsewhere: absolute paths
        doc[key] = str((KERNEL_TESTBED.parent / doc[key]).resolve())
    doc["emulation"]["faults"] = faults
    path = tmp_path / "kernel-faults.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_doc_shows_fault_examples() -> None:
    # the examples the user copied: a lossy link by name and a cable swap
    kinds = {parse_fault(f)[0] for f in _fault_examples()}
    assert {"lossy_link", "miswired"} <= kinds, _fault_examples()


@pytest.mark.parametrize("spec", _fault_examples())
def test_every_documented_fault_example_is_accepted_for_the_kernel_lab(
        spec: str, tmp_path: Path) -> None:
    kind, target, params = parse_fault(spec)
    assert kind in FAULTS, f"{spec}: {kind!r} is no kernel-lab fault ({sorted(FAULTS)})"
    path = _kernel_testbed_with(tmp_path, [{"kind": kind, "target": target, "params": params}])
    try:
        load_testbed(path, check_drivers=False)
    except ConfigError as exc:
        pytest.fail(f"docs/kernel-lab.md's --fault {spec} is refused:\n" + "\n".join(exc.problems))


def test_every_kernel_fault_kind_has_its_row() -> None:
    faults = _section("Faults")
    missing = [kind for kind in FAULTS if f"| `{kind}`" not in faults]
    assert not missing, f"docs/kernel-lab.md's Faults table lacks {missing}"


def test_the_lossy_link_row_names_every_parameter() -> None:
    # the parameters a user places a partial, one-way, one-protocol drop with
    row = next(ln for ln in _section("Faults").splitlines() if ln.startswith("| `lossy_link`"))
    missing = [p for p in FAULTS["lossy_link"].params.model_fields if f"`{p}`" not in row]
    assert not missing, f"the lossy_link row does not name {missing}"


def _workflow_commands() -> list[list[str]]:
    """The ``labtest ...`` lines of the keep-it-up section's shell block."""
    section = _section("Keep it up")
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the keep-it-up section has no shell block"
    out = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "labtest":
            out.append([w for w in words[1:] if w != "&"])
    return out


def test_the_keep_it_up_workflow_commands_parse() -> None:
    commands = _workflow_commands()
    assert {c[0] for c in commands} >= {"emulate", "testbed", "run"}, commands
    for argv in commands:
        try:
            build_parser(argv).parse_args(argv)
        except SystemExit:
            pytest.fail(f"docs/kernel-lab.md: 'labtest {' '.join(argv)}' does not parse")


def test_the_hand_recipes_use_nft_and_tbf_or_htb_never_netem() -> None:
    recipes = _section("Keep it up").split("| fault | command |", 1)
    assert len(recipes) == 2, "the recipe table is gone"
    table = "\n".join(ln for ln in recipes[1].splitlines() if ln.startswith("|"))
    commands = re.findall(r"`([^`]*)`", table)
    netem = [c for c in commands if "netem" in c]
    assert not netem, f"recipes need netem, which this kernel lacks: {netem}"
    assert any(re.search(r"\bnft\b", c) and "numgen random" in c for c in commands), table
    assert any(re.search(r"\btc qdisc \S+ dev \S+ root (tbf|htb)\b", c) for c in commands), table


def test_a_fault_spec_keeps_a_colon_in_its_target_and_in_a_value() -> None:
    # the doc's cable swap: its other link is named dev:port too (it was read as the target
    # 'leaf1:Ethernet0:other=leaf2:Ethernet0' with no parameters)
    assert parse_fault("miswired@leaf1:Ethernet0:other=leaf2:Ethernet0") == (
        "miswired", "leaf1:Ethernet0", {"other": "leaf2:Ethernet0"})
    assert parse_fault("lossy_link@leaf1:Ethernet0--spine1:Ethernet0:loss=0.3,proto=udp,"
                       "spare_bfd=true") == (
        "lossy_link", "leaf1:Ethernet0--spine1:Ethernet0",
        {"loss": 0.3, "proto": "udp", "spare_bfd": True})
    assert parse_fault("link_down@leaf1:Ethernet0") == ("link_down", "leaf1:Ethernet0", {})
    assert parse_fault("unreachable_device@spine1") == ("unreachable_device", "spine1", {})
