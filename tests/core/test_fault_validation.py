"""Faults the lab cannot inject are refused when the testbed loads, located, never mid-run.

Issue 36 item 3: ``labtest testbed check`` accepted ``mtu_mismatch`` on ``host8`` (a
device, where a port is needed) and ``labtest run`` then crashed at collection. Here every
fault of the model catalogue and of the kernel lab is held against probes whose accepting
target types are written down independently of the checker: a probe no declared type
accepts must be refused at the fault entry's ``file:line``, one that fits must load (and,
on the model, build a fabric: the check and the run agree). Missing names, out-of-range
and unknown parameters are refused for every kind; ``labtest run`` on a refused testbed
(or a lab that fails to start) exits BROKEN with one located line and no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, get_args

import pytest

from labtest.cli import main
from labtest.emulation.kernel.faults import FAULTS as KERNEL
from labtest.emulation.model.faults import TRAFFIC_TARGETS, load_catalogue
from labtest.errors import ConfigError
from labtest.run import EXIT_BROKEN
from labtest.testbed import load_testbed
from labtest.testbed.faultcheck import TARGET_FORM, TARGET_TEXT, TargetType, doc_cells

MODEL = load_catalogue()
ROOT = Path(__file__).resolve().parents[2]

TINY = """\
name: tiny
devices:
  spine1: {role: spine, driver: sonic}
  leaf1: {role: leaf, driver: sonic}
  leaf2: {role: leaf, driver: eos}
  host1: {role: host, driver: linux}
  host2: {role: host, driver: linux}
  tg1: {role: tg, driver: snappi-tg}
  pdu1: {role: pdu, driver: pdu, vars: {feeds: {1: leaf1}}}
links:
  - {a: "leaf1:Ethernet0", b: "spine1:Ethernet0", speed_gbps: 400, optic: 400G-DR4}
  - {a: "leaf2:Ethernet0", b: "spine1:Ethernet8", speed_gbps: 400, optic: 400G-DR4}
  - {a: "host1:eth0", b: "leaf1:Ethernet16", speed_gbps: 400, optic: 400G-DR4}
  - {a: "host2:eth0", b: "leaf2:Ethernet16", speed_gbps: 400, optic: 400G-DR4}
  - {a: "tg1:p1", b: "leaf1:Ethernet32", speed_gbps: 400, optic: 400G-FR4}
"""
FABRIC_LINK = "leaf1:Ethernet0--spine1:Ethernet0"
HOST_LINK = "host1:eth0--leaf1:Ethernet16"
#: probe target -> the target types that accept it, written from the definitions in
#: docs/faults.md, not computed by the checker under test
PROBES: dict[str, set[str]] = {
    "leaf1": {"device", "switch"},
    "host1": {"device", "host"},
    "tg1": {"device"},  # cabled, but an instrument: neither switch nor host
    "pdu1": {"device"},  # not cabled at all
    "leaf1:Ethernet0": {"port", "link", "fabric_link"},  # either end names its link
    "host1:eth0": {"port", "link", "host_port"},
    FABRIC_LINK: {"link", "fabric_link"},
    HOST_LINK: {"link"},
    "": {"every_switch"},
}
#: per target type, a name of that type this testbed lacks (a typo)
MISSING = {
    "port": "leaf1:Ethernet99",
    "link": "leaf1:Ethernet0--spine9:Ethernet0",
    "fabric_link": "leaf1:Ethernet0--spine9:Ethernet0",
    "device": "leaf9",
    "switch": "leaf9",
    "host": "host9",
    "host_port": "host9:eth0",
}


def valid_params(kind: str, target: str) -> dict[str, Any]:
    """Parameters a fault cannot go without (a second link of the same optic; a speed)."""
    if kind == "miswired":
        return {"other": "host2:eth0--leaf2:Ethernet16" if "host1" in target
                else "leaf2:Ethernet0--spine1:Ethernet8"}
    return {"speed_gbps": 200} if kind == "degraded_nic" else {}


def write(tmp_path: Path, fault: dict[str, Any], backend: str = "model") -> tuple[Path, int]:
    """The tiny testbed with one fault entry; returns the file and the entry's line."""
    text = TINY + f"emulation:\n  backend: {backend}\n  faults:\n    - {json.dumps(fault)}\n"
    path = tmp_path / "tb.yaml"
    path.write_text(text)
    return path, text.count("\n")


def refused(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_testbed(path)
    return info.value.problems


CATALOGUES = {"model": MODEL, "kernel": KERNEL}
KINDS = [(backend, kind) for backend, cat in CATALOGUES.items() for kind in sorted(cat)]


# --- every kind declares what it may target and take --------------------------------------


@pytest.mark.parametrize(("backend", "kind"), KINDS)
def test_every_catalogued_kind_declares_its_target_types_and_params(backend, kind) -> None:
    decl = CATALOGUES[backend][kind]
    known = set(get_args(TargetType))
    assert decl.targets and set(decl.targets) <= known, decl.targets
    assert decl.params.model_config.get("extra") == "forbid"  # unknown params are errors
    assert set(decl.refs) <= set(decl.params.model_fields)
    for types_ in decl.refs.values():
        assert types_ and set(types_) <= known


def test_target_types_are_described_and_traffic_declarations_are_all_used() -> None:
    assert set(TARGET_TEXT) == set(TARGET_FORM) == set(get_args(TargetType))
    assert set(TRAFFIC_TARGETS) <= set(MODEL)  # no declaration for a fault that is gone


def test_gray_faults_declare_their_targets_too() -> None:
    from labtest.emulation.model import gray

    assert all(ft.targets == ("link",) for ft in gray.GRAY)


def test_docs_show_each_faults_declared_target_and_parameter_ranges() -> None:
    text = (ROOT / "docs/faults.md").read_text()
    stale = []
    for backend, kind in KINDS:
        target, params = doc_cells(CATALOGUES[backend][kind])
        if not any(line.startswith(f"| `{kind}` |") and f"| {target} | {params} |" in line
                   for line in text.splitlines()):
            stale.append(f"{backend} {kind}: | {target} | {params} |")
    stale += [t for t, form in TARGET_FORM.items() if f"| `{t}` | {form} |" not in text]
    assert not stale, "docs/faults.md is out of step with the declarations:\n" + "\n".join(stale)


# --- the right target loads; every wrong one is refused at the entry's line ----------------


PROBE_CASES = [(b, k, p) for b, k in KINDS for p in PROBES]


@pytest.mark.parametrize(("backend", "kind", "probe"), PROBE_CASES)
def test_target_of_the_wrong_type_is_refused_the_right_one_accepted(
    tmp_path, backend, kind, probe
) -> None:
    decl = CATALOGUES[backend][kind]
    fault = {"kind": kind, "target": probe, "params": valid_params(kind, probe)}
    path, line = write(tmp_path, fault, backend)
    if PROBES[probe] & set(decl.targets):
        tb = load_testbed(path)
        if backend == "model":  # the run agrees: the fabric injects it at start
            from labtest.emulation.model.fabric import Fabric

            assert [f.kind for f in Fabric(tb).faults.values()] == [kind]
        return
    errs = refused(path)
    assert len(errs) == 1, errs
    assert errs[0].startswith(f"{path}:{line}:") and ".target: " in errs[0], errs[0]
    assert f"fault 1 ({kind}): " in errs[0] and f"{kind} needs " in errs[0], errs[0]


def test_the_issue_case_names_the_port_that_would_fit(tmp_path) -> None:
    path, line = write(tmp_path, {"kind": "mtu_mismatch", "target": "host1", "params": {}})
    (err,) = refused(path)
    assert err.startswith(f"{path}:{line}:") and err.endswith(
        "fault 1 (mtu_mismatch): target 'host1' is a device (role host); "
        "mtu_mismatch needs a port like 'host1:eth0'"
    ), err


@pytest.mark.parametrize(("backend", "kind"), KINDS)
def test_a_missing_name_is_refused_never_dropped_or_moved(tmp_path, backend, kind) -> None:
    decl = CATALOGUES[backend][kind]
    kind_of = next(t for t in decl.targets if t in MISSING)
    target = MISSING[kind_of]
    path, line = write(tmp_path, {"kind": kind, "target": target,
                                  "params": valid_params(kind, "")}, backend)
    (err,) = refused(path)
    assert err.startswith(f"{path}:{line}:") and f"target {target!r}: " in err, err
    assert "unknown device" in err or "no cabled port" in err or "no link" in err, err


def test_a_reversed_link_name_is_refused_with_the_name_that_fits(tmp_path) -> None:
    reversed_name = "spine1:Ethernet0--leaf1:Ethernet0"
    path, _ = write(tmp_path, {"kind": "flapping_link", "target": reversed_name})
    (err,) = refused(path)
    assert f"it is named {FABRIC_LINK!r}" in err, err


def test_a_param_naming_a_link_is_checked_like_a_target(tmp_path) -> None:
    path, line = write(tmp_path, {"kind": "miswired", "target": FABRIC_LINK,
                                  "params": {"other": "leaf2"}})
    (err,) = refused(path)
    assert err.startswith(f"{path}:{line}:") and "params.other 'leaf2' is a device" in err, err
    assert "miswired needs a link like" in err, err


def _out_of_range() -> list[tuple[str, str, str, Any, str]]:
    """(backend, kind, param, a value past one of its bounds, that bound) for every bound."""
    out = []
    for backend, kind in KINDS:
        for name, info in CATALOGUES[backend][kind].params.model_fields.items():
            for m in info.metadata:
                for attr, past in (("gt", 0), ("ge", -1), ("lt", 0), ("le", 1)):
                    bound = getattr(m, attr, None)
                    if bound is not None:
                        out.append((backend, kind, name, bound + past, f"{bound:g}"))
    return out


@pytest.mark.parametrize(("backend", "kind", "name", "value", "bound"), _out_of_range())
def test_a_parameter_out_of_range_is_refused_with_the_allowed_range(
    tmp_path, backend, kind, name, value, bound
) -> None:
    target = next(p for p, types in PROBES.items()
                  if types & set(CATALOGUES[backend][kind].targets))
    params = {**valid_params(kind, target), name: value}
    path, line = write(tmp_path, {"kind": kind, "target": target, "params": params}, backend)
    (err,) = refused(path)
    assert err.startswith(f"{path}:{line}:") and f".params.{name}: " in err, err
    assert f"params.{name} = {value!r}: out of range; allowed: " in err, err
    assert bound in err.rsplit("allowed: ", 1)[1], err


@pytest.mark.parametrize(("backend", "kind"), KINDS)
def test_an_unknown_parameter_is_refused_naming_the_known_ones(tmp_path, backend, kind) -> None:
    decl = CATALOGUES[backend][kind]
    target = next(p for p, types in PROBES.items() if types & set(decl.targets))
    params = {**valid_params(kind, target), "bogus": 1}
    path, line = write(tmp_path, {"kind": kind, "target": target, "params": params}, backend)
    (err,) = refused(path)
    takes = ", ".join(decl.params.model_fields) or "no parameters"
    assert err.startswith(f"{path}:{line}:"), err
    assert err.endswith(f"params.bogus: unknown parameter; {kind} takes {takes}"), err


def test_a_kind_of_the_other_backend_is_unknown(tmp_path) -> None:
    path, line = write(tmp_path, {"kind": "link_down", "target": FABRIC_LINK})  # kernel only
    (err,) = refused(path)
    assert err.startswith(f"{path}:{line}:") and "unknown fault 'link_down'" in err, err


# --- labtest run: one located line, exit BROKEN, no traceback ------------------------------


def test_labtest_run_refuses_before_any_lab_starts(tmp_path) -> None:
    path, line = write(tmp_path, {"kind": "mtu_mismatch", "target": "host1"})
    done = subprocess.run(
        [sys.executable, "-m", "labtest.cli", "run", "--testbed", str(path), "--suite", "link",
         "--alluredir", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )
    assert done.returncode == EXIT_BROKEN == 7, done.stdout + done.stderr
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"labtest run: BROKEN: {path}:{line}:"), lines
    assert "mtu_mismatch needs a port like 'host1:eth0'" in lines[0]
    assert not (tmp_path / "results").exists()  # no pytest, no lab, no results


def test_testbed_check_gives_the_same_located_line(tmp_path, capsys) -> None:
    path, line = write(tmp_path, {"kind": "mtu_mismatch", "target": "host1"})
    assert main(["testbed", "check", str(path)]) == 2
    assert f"{path}:{line}:" in capsys.readouterr().err


#: accepted by the check, refused by the model as it starts: cables whose connectors differ
CROSSED = {"kind": "miswired", "target": "tg1:p1", "params": {"other": HOST_LINK}}


@pytest.mark.parametrize("when", ["collection", "fixture", "fixture on an xdist worker"])
def test_a_lab_that_does_not_start_stops_the_session_broken_and_located(
    pytester, tmp_path, when
) -> None:
    path, line = write(tmp_path, CROSSED)
    xdist = ("-n", "1") if "xdist" in when else ()
    if xdist:
        pytest.importorskip("xdist")
    if when == "collection":  # as the suites' pytest_generate_tests ask for the testbed
        pytester.makeconftest(textwrap.dedent("""\
            from labtest.plugin import testbed_of

            def pytest_generate_tests(metafunc):
                testbed_of(metafunc.config)
            """))
    pytester.makepyfile(test_a="def test_a(testbed):\n    pass\n",
                        test_b="def test_b(testbed):\n    pass\n")
    result = pytester.runpytest_subprocess(f"--testbed={path}", "--emulate", *xdist)
    assert result.ret == EXIT_BROKEN
    text = result.stdout.str() + result.stderr.str()
    said = [ln for ln in text.splitlines() if "the emulated lab did not start" in ln]
    assert len(said) == 1 and f"{path}:{line}:" in said[0], text
    assert "cannot cross 400G-FR4 and 400G-DR4 cables" in said[0], text
    assert "Traceback" not in text and "INTERNALERROR" not in text and "passed" not in text
