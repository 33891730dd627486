"""The sign-off document as one self-contained HTML page.

The first screen answers "can I sign this?": the verdict, the root causes of
the failures (with their evidence and the failures they explain), what was not
proven, then every failed and broken test with its culprit (the measurement
that missed, its limit and source; or the device that could not be asked and
what it said). The coverage matrix (requirement x unit) and the waivers follow. Plots and
raw output of those tests are inlined, so the page needs nothing but itself;
the rest of the evidence is linked relative to the bundle. No JavaScript.
"""

from __future__ import annotations

import base64
import math
from html import escape
from pathlib import Path
from typing import Any

from labtest import safefs
from labtest.measure import Limit
from labtest.reports import results

RAW_MAX_CHARS = 4000
PNG_MAX_BYTES = 1_500_000
OUTCOME_LABEL = {"failed": "FAILED", "broken": "BROKEN", "skipped": "SKIPPED", "passed": "PASSED"}
CATEGORY_LABEL = {
    "product-failure": "product failure",
    "infrastructure": "broken infrastructure",
    "emulation-deviation": "emulation deviation",
    "test-defect": "test defect",
}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1c1c1c;
 background:#f4f5f7}
main{max-width:1320px;margin:0 auto;padding:0 20px 40px}
h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d5d8dd;padding-bottom:4px}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border:1px solid #e1e4e8;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#eef0f3;font-weight:600}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{background:#1e1f22;color:#e8e8e8;padding:8px 10px;overflow:auto;max-height:260px;margin:6px 0}
.banner{color:#fff;padding:16px 20px 14px}
.banner .wrap{max-width:1320px;margin:0 auto;display:flex;gap:28px;align-items:center}
.banner .verdict{font-size:44px;font-weight:800;letter-spacing:1px}
.banner .facts{font-size:14px;opacity:.95}
.banner .facts b{font-weight:700}
.v-FAIL{background:#c62828}.v-INCOMPLETE{background:#ffb300;color:#1c1c1c}
.v-PASS{background:#2e7d32}
.v-SKIPPED{background:#757575}.v-MARGINAL{background:#f9a825;color:#1c1c1c}
.badge{display:inline-block;padding:1px 7px;border-radius:3px;color:#fff;font-size:12px;
 font-weight:700}
.o-failed{background:#c62828}.o-broken{background:#e65100}.o-skipped{background:#757575}
.o-passed{background:#2e7d32}
tr.FAIL td{background:#fdecea}tr.MARGINAL td{background:#fff8e1}
.card{background:#fff;border:1px solid #e1e4e8;border-left:6px solid #c62828;margin:10px 0;
 padding:10px 14px}
.card.broken{border-left-color:#e65100}
.card h3{margin:0 0 6px;font-size:15px}
.culprit{font-size:15px;margin:4px 0}
.muted{color:#5f6368}
.plots img{max-width:480px;border:1px solid #e1e4e8;margin:6px 8px 0 0}
nav{font-size:13px;padding:8px 0}nav a{margin-right:12px}
.ok{color:#2e7d32;font-weight:700}
.card.cause{border-left-color:#6a1b9a}.card.hole{border-left-color:#ffb300}
.consequence{color:#6a1b9a;font-weight:600}
td.c-proven{background:#e8f5e9;text-align:center}td.c-failed{background:#fdecea;text-align:center}
td.c-broken{background:#fff3e0;text-align:center}
td.c-not-proven{background:#fff8e1;text-align:center;font-weight:700}
td.c-waived{background:#eceff1;text-align:center}
"""
#: how a coverage cell shows in the matrix (the reason is its tooltip and is listed below)
CELL_MARK = {"proven": "✓", "failed": "✗", "broken": "B", "not proven": "?", "waived": "W"}


def render(doc: dict[str, Any], out_dir: Path) -> str:
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(doc['verdict'])}: labtest sign-off {_e(_testbed_name(doc))}</title>",
        f"<style>{CSS}</style></head><body>",
        _banner(doc),
        "<main>",
        _nav(doc),
        _root_causes(doc),
        _holes(doc),
        _attention(doc, out_dir),
        _suites(doc),
        _coverage(doc),
        _waivers(doc),
        _criteria(doc),
        _measurements(doc),
        _tests(doc),
        _inventory(doc),
        _testbed(doc),
        _limits(doc),
        _run(doc),
        _evidence(doc),
        "</main></body></html>",
    ]
    return "\n".join(parts)


# --- first screen ---------------------------------------------------------------------


def _banner(doc: dict[str, Any]) -> str:
    run, limits = doc["run"], doc["limits"] or {}
    commit = run.get("git_commit") or "not in git"
    facts = [
        f"testbed <b>{_e(_testbed_name(doc))}</b>"
        + (" (emulated)" if run.get("emulated") else ""),
        f"limits <b>{_e(limits.get('profile', 'none'))}</b>",
        f"run by <b>{_e(run['user'])}@{_e(run['host'])}</b>, {_e(run['started_utc'])}",
        f"commit <span class='mono'>{_e(commit[:12])}</span>",
    ]
    return (
        f"<header class='banner v-{_e(doc['verdict'])}'><div class='wrap'>"
        f"<div class='verdict'>{_e(doc['verdict'])}</div>"
        f"<div class='facts'><div style='font-size:17px'><b>{_e(doc['verdict_reason'])}</b>"
        f"{_marginal_note(doc)}</div><div>{' · '.join(facts)}</div></div></div></header>"
    )


def _marginal_note(doc: dict[str, Any]) -> str:
    n = doc["marginal_measurements"]
    return f" · {n} marginal measurement(s)" if n else ""


def _nav(doc: dict[str, Any]) -> str:
    cov = _coverage_of(doc)
    links = [
        ("causes", f"Root causes ({len(doc.get('root_causes') or [])})"),
        ("holes", f"Not proven ({len(_hole_lines(doc))})"),
        ("attention", f"Failed and broken ({len(doc['attention'])})"),
        ("suites", "Suites"),
        ("coverage", "Coverage"),
        ("waivers", f"Waivers ({len(cov.get('waivers') or [])})"),
        ("criteria", "Criteria"),
        ("measurements", f"Measurements ({len(doc['measurements'])})"),
        ("tests", f"Tests ({doc['counts']['total']})"),
        ("inventory", "Inventory"),
        ("testbed", "Testbed"),
        ("limits", "Limits"),
        ("run", "Run"),
        ("evidence", "Evidence"),
    ]
    if doc.get("allure_report"):
        links.append(("", "Allure report"))
    items = [
        f"<a href='{_e(doc['allure_report'])}'>{text}</a>" if not anchor
        else f"<a href='#{anchor}'>{_e(text)}</a>"
        for anchor, text in links
    ]
    return f"<nav>{''.join(items)}</nav>"


def _root_causes(doc: dict[str, Any]) -> str:
    causes = doc.get("root_causes") or []
    head = f"<h2 id='causes'>Root causes ({len(causes)})</h2>"
    if not causes:
        return head + "<p class='ok'>Nothing failed: no root cause to name.</p>"
    cards = []
    for i, c in enumerate(causes, 1):
        evidence = "".join(f"<li>{_e(e)}</li>" for e in c.get("evidence", []))
        impact = "".join(f"<li>{_e(x)}</li>" for x in c.get("impact", []))
        shown = "".join(f"<li class='mono'>{_e(n)}</li>" for n in c.get("tests", []))
        follows = "".join(f"<li class='mono'>{_e(n)}</li>" for n in c.get("consequences", []))
        cards.append(
            f"<div class='card cause'><h3>{i}. {_e(c['cause'])}</h3>"
            f"<div class='muted'>{_e(c['kind'].replace('_', ' '))} · culprit "
            f"<b>{_e(c['culprit'] or 'none: no fault on its path explains it')}</b></div>"
            + (f"<div>evidence:</div><ul>{evidence}</ul>" if evidence else "")
            + (f"<div class='muted'>{_e(c['not_runner_up'])}</div>"
               if c.get("not_runner_up") else "")
            + (f"<div class='muted'>perhaps a consequence of {_e(c['downstream_of'])}: every "
               "traffic failure it explains crossed it</div>" if c.get("downstream_of") else "")
            + (f"<div>what it costs:</div><ul>{impact}</ul>" if impact else "")
            + (f"<div>failures that show it:</div><ul>{shown}</ul>" if shown else "")
            + (f"<div class='consequence'>explains {len(c['consequences'])} other failure(s) "
               f"(consequences, not separate culprits):</div><ul>{follows}</ul>"
               if follows else "")
            + "</div>"
        )
    return head + "".join(cards)


def _coverage_of(doc: dict[str, Any]) -> dict[str, Any]:
    return doc.get("coverage") or {}


def _hole_lines(doc: dict[str, Any]) -> list[str]:
    cov = _coverage_of(doc)
    lines = [r["summary"] for r in cov.get("requirements", []) if r["broken"] or r["not_proven"]]
    return lines + list(cov.get("unjudged") or [])


def _holes(doc: dict[str, Any]) -> str:
    lines = _hole_lines(doc)
    head = f"<h2 id='holes'>Not proven ({len(lines)})</h2>"
    if not lines:
        return head + "<p class='ok'>Every required cell is proven or waived.</p>"
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return (head + "<div class='card hole'><div>A PASS needs every required cell proven or "
            f"waived in the limits profile; these were not:</div><ul>{items}</ul></div>")


def _attention(doc: dict[str, Any], out_dir: Path) -> str:
    items = doc["attention"]
    head = f"<h2 id='attention'>Failed and broken ({len(items)})</h2>"
    if not items:
        return head + "<p class='ok'>No test failed and none was broken.</p>"
    because = results.consequence_texts(doc.get("root_causes") or [])
    return head + "".join(_card(item, out_dir, because.get(item["nodeid"])) for item in items)


def _card(item: dict[str, Any], out_dir: Path, consequence_of: str | None = None) -> str:
    outcome = item["outcome"]
    plan = ", ".join(item["plan_ids"])
    category = CATEGORY_LABEL.get(item["category"] or "", item["category"] or "")
    lines = [
        f"<div class='card {outcome}'><h3><span class='badge o-{outcome}'>"
        f"{OUTCOME_LABEL[outcome]}</span> {_e(item['nodeid'])}</h3>",
        f"<div class='muted'>suite {_e(item['suite'])}"
        + (f" · plan {_e(plan)}" if plan else "")
        + (f" · {_e(category)}" if category else "")
        + (f" · device <b>{_e(item['device'])}</b>" if item["device"] else "")
        + "</div>",
    ]
    if consequence_of:
        lines.append(f"<div class='consequence'>consequence of {_e(consequence_of)}</div>")
    for m in item["culprits"]:
        lines.append(
            f"<div class='culprit'>✗ <b>{_e(m['name'])}</b> {_e(_where(m))}: "
            f"<b>{_e(_value(m))}</b>, limit {_e(_limit(m['limit']))} "
            f"<span class='muted'>(source: {_e((m['limit'] or {}).get('source', '-'))})</span>"
            "</div>"
        )
    if not item["culprits"] and item["message"]:
        lines.append(f"<div class='culprit'>{_e(item['message'].splitlines()[0])}</div>")
    if item["message"] and not item["culprits"] and "\n" in item["message"]:
        lines.append(f"<pre>{_e(item['message'])}</pre>")
    lines.append(_inline_evidence(item["attachments"], out_dir))
    lines.append("</div>")
    return "".join(lines)


def _inline_evidence(attachments: list[dict[str, str]], out_dir: Path) -> str:
    texts, images = [], []
    for att in attachments:
        try:  # a regular file inside the evidence, never through a link (labtest.safefs)
            raw = safefs.read_inside(out_dir / "evidence", att["source"])
        except safefs.UnsafePath:
            continue  # refused when the bundle was built (and named there), or missing
        link = f"<a href='evidence/{_e(att['source'])}'>{_e(att['name'])}</a>"
        if att["type"] == "image/png" and len(raw) <= PNG_MAX_BYTES:
            data = base64.b64encode(raw).decode()
            images.append(
                f"<figure style='display:inline-block;margin:0'>"
                f"<img alt='{_e(att['name'])}' src='data:image/png;base64,{data}'>"
                f"<figcaption class='muted'>{link}</figcaption></figure>"
            )
        elif att["type"].startswith("text/") and att["name"] != "measurements":
            text = raw.decode("utf-8", errors="replace")
            cut = "\n… (truncated; see the file)" if len(text) > RAW_MAX_CHARS else ""
            texts.append(f"<div>{link}</div><pre>{_e(text[:RAW_MAX_CHARS] + cut)}</pre>")
        else:
            texts.append(f"<div>{link}</div>")
    out = "".join(texts)
    if images:
        out += f"<div class='plots'>{''.join(images)}</div>"
    return out


# --- tables ---------------------------------------------------------------------------


def _suites(doc: dict[str, Any]) -> str:
    by_suite = _coverage_of(doc).get("by_suite") or {}
    rows = []
    for s in doc["suites"]:
        cov = by_suite.get(s["suite"])
        rows.append([_verdict(s["verdict"]), _e(s["suite"]), s["failed"], s["broken"],
                     s["skipped"], s["passed"],
                     f"{cov['proven']}/{cov['required']}" if cov else "-"])
    return _section(
        "suites", "Verdict per suite",
        _table(["verdict", "suite", "failed", "broken", "skipped", "passed",
                "coverage (proven or waived / required)"], rows),
    )


def _coverage(doc: dict[str, Any]) -> str:
    """Per unit kind, a matrix: one row per unit, one column per requirement."""
    reqs = _coverage_of(doc).get("requirements") or []
    if not reqs:
        return _section("coverage", "Coverage", "<p class='muted'>No requirements were stated "
                        "for the suites of this run (suites/&lt;family&gt;/requirements.yaml).</p>")
    parts = ["<p class='muted'>✓ proven · ✗ failed · B broken · ? not proven · W waived "
             "(hover a cell for its reason; every reason is listed below each table)</p>"]
    kinds = list(dict.fromkeys(r["unit"] for r in reqs))
    for kind in kinds:
        cols = [r for r in reqs if r["unit"] == kind]
        units = list(dict.fromkeys(c["unit"] for r in cols for c in r["cells"]))
        cells = {(c["unit"], r["id"], r["suite"]): c for r in cols for c in r["cells"]}
        head = [kind] + [f"{r['id']} ({r['suite']})" for r in cols]
        rows = []
        for unit in units:
            row = [("", f"<span class='mono'>{_e(unit)}</span>")]
            for r in cols:
                c = cells.get((unit, r["id"], r["suite"]))
                if c is None:
                    row.append(("", ""))
                    continue
                tip = c["reason"] + (f" [waived: {c['waiver']}]" if c["waiver"] else "")
                cls = "c-" + c["status"].replace(" ", "-")
                row.append((cls, f"<span title='{_e(tip)}'>{CELL_MARK[c['status']]}</span>"))
            rows.append(row)
        table = _matrix(head, rows)
        notes = [
            f"<li><span class='mono'>{_e(c['requirement'])} @ {_e(c['unit'])}</span>: "
            f"{_e(c['status'])} — {_e(c['reason'])}"
            + (f" <i>(waived: {_e(c['waiver'])})</i>" if c["waiver"] else "") + "</li>"
            for r in cols for c in r["cells"] if c["status"] != "proven"
        ]
        parts.append(f"<h3>{_e(kind)}</h3>{table}"
                     + (f"<ul>{''.join(notes)}</ul>" if notes else ""))
    unjudged = _coverage_of(doc).get("unjudged") or []
    if unjudged:
        parts.append("<h3>devices no suite could judge</h3><ul>"
                     + "".join(f"<li>{_e(line)}</li>" for line in unjudged) + "</ul>")
    return _section("coverage", "Coverage (requirement x unit)", "".join(parts))


def _matrix(head: list[str], rows: list[list[tuple[str, str]]]) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    trs = "".join(
        "<tr>" + "".join(f"<td class='{cls}'>{html}</td>" if cls else f"<td>{html}</td>"
                         for cls, html in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _waivers(doc: dict[str, Any]) -> str:
    cov = _coverage_of(doc)
    waivers = cov.get("waivers") or []
    if not waivers:
        return _section("waivers", "Waivers", "<p class='muted'>The limits profile and the "
                        "testbed each waive nothing: every required cell had to be proven.</p>")
    used: dict[str, int] = {}
    for r in cov.get("requirements", []):
        used[r["id"]] = used.get(r["id"], 0) + r["waived"]
    rows = [
        [f"<span class='mono'>{_e(w['requirement'])}</span>",
         _e(", ".join(w["units"]) if isinstance(w["units"], list) else w["units"]),
         _e(w["reason"]), _e(w["source"]), _e(w.get("origin", "limits profile")),
         used.get(w["requirement"], 0)]
        for w in waivers
    ]
    return _section("waivers", "Waivers (the limits profile's and the testbed's)",
                    _table(["requirement", "units", "reason", "source", "from",
                            "cells waived"], rows))


def _criteria(doc: dict[str, Any]) -> str:
    rows = [
        [_verdict(c["verdict"]), f"<code>{_e(c['criterion'])}</code>", _e(_limit(c["limit"])),
         _e((c["limit"] or {}).get("source", "-")), c["count"], c["FAIL"], c["MARGINAL"],
         _e(_range(c))]
        for c in doc["criteria"]
    ]
    head = ["verdict", "criterion", "limit", "source", "n", "fail", "marginal", "min … max"]
    return _section("criteria", "Verdict per criterion", _table(head, rows))


def _measurements(doc: dict[str, Any]) -> str:
    rows = []
    for m in doc["measurements"]:
        rows.append(
            (m["verdict"], [
                _verdict(m["verdict"]), _e(m["name"]), _e(_where(m)), _e(_value(m)),
                _e(_limit(m["limit"])), _e((m["limit"] or {}).get("source", "-")),
                f"<span class='mono'>{_e(m['nodeid'])}</span>",
            ])
        )
    head = ["verdict", "measurement", "where", "value", "limit", "source", "test"]
    return _section("measurements", "Measurements", _table(head, [r for _, r in rows],
                                                             [c for c, _ in rows]))


def _tests(doc: dict[str, Any]) -> str:
    rows = []
    for t in doc["tests"]:
        note = t["skip_reason"] or (t["message"] or "").split("\n")[0]
        rows.append([
            f"<span class='badge o-{t['outcome']}'>{OUTCOME_LABEL[t['outcome']]}</span>",
            f"<span class='mono'>{_e(t['nodeid'])}</span>", _e(t["suite"]),
            _e(", ".join(t["plan_ids"])), f"{t['duration_s']:.2f}", _e(note),
        ])
    head = ["outcome", "test", "suite", "plan IDs", "s", "reason"]
    return _section("tests", "Tests", _table(head, rows))


def _inventory(doc: dict[str, Any]) -> str:
    devices, optics = [], []
    for name, entry in sorted(doc["inventory"].items()):
        facts = entry.get("facts") or {}
        devices.append([
            _e(name), _e(entry.get("role")), _e(entry.get("driver")), _e(facts.get("vendor")),
            _e(facts.get("model")), _e(facts.get("serial") or facts.get("serial_number")),
            _e(facts.get("os_version") or facts.get("software_version") or facts.get("os")),
            _e(entry.get("error")),
        ])
        for port, optic in sorted((entry.get("optics") or {}).items()):
            optics.append([_e(f"{name}:{port}"), *(_e(optic.get(k)) for k in (
                "vendor", "part_number", "serial", "firmware", "media_type"))])
    body = ""
    if doc.get("inventory_error"):
        body += f"<p>Inventory not read: {_e(doc['inventory_error'])}</p>"
    head = ["device", "role", "driver", "vendor", "model", "serial", "OS", "error"]
    body += _table(head, devices) if devices else "<p class='muted'>No inventory.</p>"
    if optics:
        body += "<h3>Optics</h3>" + _table(
            ["port", "vendor", "part number", "serial", "firmware", "media"], optics
        )
    return _section("inventory", "Device inventory", body)


def _testbed(doc: dict[str, Any]) -> str:
    tb = doc["testbed"]
    if not tb:
        return _section("testbed", "Testbed and cabling plan", "<p>No testbed given.</p>")
    facts = _kv([
        ("name", tb["name"]), ("description", tb["description"]), ("file", tb["file"]),
        ("SHA-256", tb["sha256"]),
    ])
    devices = _table(
        ["device", "role", "driver", "address", "transports"],
        [[_e(n), _e(d["role"]), _e(d["driver"]), _e(d["address"]), _e(", ".join(d["transports"]))]
         for n, d in tb["devices"].items()],
    )
    links = _table(
        ["a", "b", "speed (Gb/s)", "optic", "length (m)"],
        [[_e(lk["a"]), _e(lk["b"]), _e(_num(lk["speed_gbps"])), _e(lk["optic"]),
          _e(_num(lk["length_m"]))] for lk in tb["links"]],
    )
    emulation = ""
    if tb.get("emulation"):
        faults = tb["emulation"].get("faults", [])
        emulation = "<h3>Emulation</h3>" + _table(
            ["fault", "target", "params", "at (s)"],
            [[_e(f["kind"]), _e(f["target"]), _e(f["params"]), _e(f["at_s"])] for f in faults],
        ) if faults else "<p>Emulated lab, no faults injected.</p>"
    body = f"{facts}<h3>Devices</h3>{devices}<h3>Cabling plan</h3>{links}{emulation}"
    return _section("testbed", "Testbed and cabling plan", body)


def _limits(doc: dict[str, Any]) -> str:
    lim = doc["limits"]
    if not lim:
        return _section("limits", "Limits profile", "<p>No limits profile.</p>")
    facts = _kv([("profile", lim["profile"]), ("description", lim["description"]),
                 ("file", lim["file"]), ("SHA-256", lim["sha256"])])
    rows = [[f"<code>{_e(k)}</code>", _e(_limit(v)), _e(_marginal(v)), _e(v["source"])]
            for k, v in lim["limits"].items()]
    body = facts + _table(["key", "limit", "marginal band", "source"], rows)
    return _section("limits", "Limits profile", body)


def _run(doc: dict[str, Any]) -> str:
    run, gen = doc["run"], doc["generated"]
    body = _kv([
        ("run by", f"{run['user']}@{run['host']}"),
        ("started (UTC)", run["started_utc"]), ("finished (UTC)", run["finished_utc"]),
        ("git commit (suites)", run.get("git_commit") or "not in a git repository"),
        ("labtest", f"{run['labtest_version']} ({run.get('labtest_commit') or 'no git'})"),
        ("python / pytest", f"{run['python']} / {run['pytest']}"),
        ("command", "pytest " + " ".join(run["args"])),
        ("emulated lab", "yes" if run["emulated"] else "no"),
        ("report generated", f"{gen['utc']} by {gen['user']}@{gen['host']}"),
        ("Allure report", doc.get("allure_report") or doc.get("allure_error") or "not built"),
    ])
    return _section("run", "Run", body)


def _evidence(doc: dict[str, Any]) -> str:
    rows = [[f"<a class='mono' href='{_e(f['path'])}'>{_e(f['path'])}</a>", f["bytes"],
             f"<span class='mono'>{f['sha256']}</span>"] for f in doc["evidence"]]
    note = (
        "<p>Every file of this folder is hashed in <code>MANIFEST.sha256</code>; "
        "<code>labtest report --verify FOLDER</code> (or <code>sha256sum -c MANIFEST.sha256"
        "</code>) recomputes them.</p>"
    )
    refused = doc.get("refused") or []
    if refused:
        items = "".join(f"<li><span class='mono'>{_e(r['path'])}</span>: {_e(r['problem'])}</li>"
                        for r in refused)
        note += (f"<div class='card hole'><div>Refused, not in this bundle ({len(refused)}): "
                 f"only regular files inside the results are copied or shown</div>"
                 f"<ul>{items}</ul></div>")
    return _section("evidence", "Evidence (SHA-256)", note + _table(["file", "bytes", "SHA-256"],
                                                                     rows))


# --- helpers --------------------------------------------------------------------------


def _e(value: object) -> str:
    return "" if value is None else escape(str(value), quote=True)


def _testbed_name(doc: dict[str, Any]) -> str:
    return (doc.get("testbed") or {}).get("name", "no testbed")


def _section(anchor: str, title: str, body: str) -> str:
    return f"<section><h2 id='{anchor}'>{_e(title)}</h2>{body}</section>"


def _table(head: list[str], rows: list[list[Any]], classes: list[str] | None = None) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    trs = []
    for i, row in enumerate(rows):
        cls = f" class='{_e(classes[i])}'" if classes else ""
        trs.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(trs)}</tbody></table>"


def _kv(pairs: list[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th style='width:190px'>{_e(k)}</th><td>{_e(v)}</td></tr>"
                   for k, v in pairs)
    return f"<table>{rows}</table>"


def _verdict(verdict: str) -> str:
    return f"<span class='badge v-{_e(verdict)}'>{_e(verdict)}</span>"


def _num(value: Any) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}" if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6) else (
            f"{value:g}")
    return "" if value is None else str(value)


def _value(m: dict[str, Any]) -> str:
    return f"{_num(m['value'])} {m['unit']}".strip()


def _where(m: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in m["labels"].items())


def _limit(limit: dict[str, Any] | None) -> str:
    if not limit:
        return "no limit"
    return Limit.model_validate(limit).describe()


def _marginal(limit: dict[str, Any]) -> str:
    lo, hi = limit.get("marginal_low"), limit.get("marginal_high")
    if lo is None and hi is None:
        return ""
    left = f"{_num(lo)} <= " if lo is not None else ""
    right = f" <= {_num(hi)}" if hi is not None else ""
    return f"{left}x{right} {limit.get('unit', '')}".strip()


def _range(row: dict[str, Any]) -> str:
    if row["min"] is None:
        return ""
    unit = f" {row['unit']}" if row["unit"] else ""
    if row["min"] == row["max"]:
        return f"{_num(row['min'])}{unit}"
    return f"{_num(row['min'])} … {_num(row['max'])}{unit}"
