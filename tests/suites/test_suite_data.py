"""Suite data files (deviations) are read like a testbed: a mistake is named with its place."""

from __future__ import annotations

import pytest

from labtest.errors import ConfigError
from labtest.fixtures import suite_data


def _family(tmp_path, monkeypatch, text: str) -> str:
    (tmp_path / "fam").mkdir()
    (tmp_path / "fam" / "deviations.yaml").write_text(text)
    monkeypatch.setattr(suite_data, "SUITES_DIR", tmp_path)
    return "fam"


def test_a_deviation_without_a_reason_is_a_located_config_error(tmp_path, monkeypatch):
    family = _family(
        tmp_path, monkeypatch,
        "deviations:\n  - id: x\n    replaces: [a]\n    match: {driver: eos}\n",
    )
    with pytest.raises(ConfigError) as err:
        suite_data.load_deviations(family)
    assert any("deviations.yaml:2:" in p and "missing" in p for p in err.value.problems)


def test_a_misspelt_field_is_named_at_its_line(tmp_path, monkeypatch):
    text = "deviations:\n  - id: x\n    reason: r\n    waive: [a]\n"
    family = _family(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError) as err:
        suite_data.load_deviations(family)
    assert any("deviations.yaml:4:" in p and "unknown field" in p for p in err.value.problems)


def test_declared_deviations_still_load(tmp_path, monkeypatch):
    family = _family(
        tmp_path,
        monkeypatch,
        "deviations:\n  - id: x\n    match: {driver: eos}\n    replaces: [a, b]\n    reason: r\n",
    )
    (dev,) = suite_data.load_deviations(family).items
    assert (dev.id, dev.match, dev.replaces, dev.reason) == (
        "x", {"driver": "eos"}, ("a", "b"), "r")
    assert dev.applies("leaf1", "eos", "leaf") and not dev.applies("leaf1", "sonic", "leaf")


def test_the_old_waives_key_is_refused_with_its_new_name(tmp_path, monkeypatch):
    """'waive' means one thing (a lab's accepted hole): a deviation 'replaces' checks."""
    text = "deviations:\n  - id: x\n    waives: [a]\n    reason: r\n"
    family = _family(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError) as err:
        suite_data.load_deviations(family)
    assert any("deviations.yaml:2:" in p and "'replaces'" in p for p in err.value.problems), \
        err.value.problems
