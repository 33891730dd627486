"""The user docs stay in step with the code they describe."""

from __future__ import annotations

from pathlib import Path

from labtest.emulation.model.faults import load_catalogue

CATALOGUE = load_catalogue()  # every fault family, registered in one place

ROOT = Path(__file__).resolve().parents[2]


def test_fault_catalogue_doc_lists_every_fault() -> None:
    text = (ROOT / "docs/faults.md").read_text()
    missing = [kind for kind in CATALOGUE if f"| `{kind}` |" not in text]
    assert not missing, f"docs/faults.md lacks {missing}"


def test_every_fault_names_a_suite_family() -> None:
    families = {"link", "transceiver", "cabling", "roce", "congestion", "failover", "collective"}
    families |= {"latency", "paths"}
    odd = {k: f.caught_by for k, f in CATALOGUE.items() if f.caught_by not in families}
    assert not odd


def test_fault_catalogue_doc_names_each_faults_catching_suite() -> None:
    text = (ROOT / "docs/faults.md").read_text()
    wrong = {
        kind: fault.caught_by
        for kind, fault in CATALOGUE.items()
        if f"| `{kind}` | {fault.caught_by} |" not in text
    }
    assert not wrong, f"docs/faults.md: the 'caught by' column should read {wrong}"
