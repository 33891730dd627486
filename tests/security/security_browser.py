"""Headless Chromium driven over its DevTools pipe: which URLs a page asks for.

``--remote-debugging-pipe`` reads commands on fd 3 and writes answers and events on
fd 4 (JSON, NUL-terminated). The page is opened with every host unreachable (a dead
proxy, every name unresolvable); ``Network.requestWillBeSent`` lists what the page
itself tried to load, which the browser's own background traffic never appears in.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from labtest.reports.screenshot import browser


@dataclass
class Visit:
    requests: list[str] = field(default_factory=list)
    text: str = ""  # document.body.innerText once the page settled


def visit(url: str, settle_s: float = 3.0, timeout_s: float = 90.0,
          shows: str | None = None) -> Visit:
    """Open ``url``; its text is read ``settle_s`` after the load event, or once the text
    ``shows`` appeared (a script-built page renders late on a loaded runner), within
    ``timeout_s``."""
    exe = browser()
    if exe is None:
        raise RuntimeError("no chromium on PATH")
    to_child, from_parent = os.pipe()[::-1]  # we write, chromium reads fd 3
    from_child, to_parent = os.pipe()  # chromium writes fd 4, we read

    def fds() -> None:  # in the child: move the ends to 3 and 4 without clobbering either
        a, b = os.dup2(from_parent, 100), os.dup2(to_parent, 101)
        os.dup2(a, 3)
        os.dup2(b, 4)

    with tempfile.TemporaryDirectory(prefix="labtest-cdp-") as profile:
        proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             f"--user-data-dir={profile}", "--remote-debugging-pipe",
             "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
             "--host-resolver-rules=MAP * ~NOTFOUND", "about:blank"],
            close_fds=False, preexec_fn=fds,  # only dup2 before exec
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(from_parent)
        os.close(to_parent)
        session = _Session(to_child, from_child, timeout_s)
        try:
            target = session.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            sid = session.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
                "sessionId"]
            session.call("Network.enable", sid=sid)
            session.call("Page.enable", sid=sid)
            session.call("Page.navigate", {"url": url}, sid=sid)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and not session.seen("Page.loadEventFired", sid):
                session.pump(0.2)
            end = time.monotonic() + settle_s
            while time.monotonic() < end:
                session.pump(0.2)
            text = _text(session, sid)
            while shows is not None and shows not in text and time.monotonic() < deadline:
                session.pump(0.2)
                text = _text(session, sid)
            requests = [e["params"]["request"]["url"] for e in session.events
                        if e.get("method") == "Network.requestWillBeSent"
                        and e.get("sessionId") == sid]
            return Visit(requests, text)
        finally:
            try:
                session.send("Browser.close")
                proc.wait(15)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
            os.close(to_child)
            os.close(from_child)


def _text(session: _Session, sid: str) -> str:
    return str(session.call("Runtime.evaluate", {
        "expression": "document.body ? document.body.innerText : ''",
        "returnByValue": True}, sid=sid)["result"].get("value", ""))


class _Session:
    def __init__(self, out: int, into: int, timeout_s: float) -> None:
        self.out, self.into, self.timeout_s = out, into, timeout_s
        self.events: list[dict[str, Any]] = []
        self.buf = b""
        self.n = 0

    def send(self, method: str, params: dict[str, Any] | None = None,
             sid: str | None = None) -> int:
        self.n += 1
        msg: dict[str, Any] = {"id": self.n, "method": method, "params": params or {}}
        if sid:
            msg["sessionId"] = sid
        os.write(self.out, json.dumps(msg).encode() + b"\0")
        return self.n

    def call(self, method: str, params: dict[str, Any] | None = None,
             sid: str | None = None) -> dict[str, Any]:
        i = self.send(method, params, sid)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            for e in self.events:
                if e.get("id") == i:
                    if "error" in e:
                        raise RuntimeError(f"{method}: {e['error']}")
                    return e["result"]
            self.pump(0.2)
        raise TimeoutError(f"chromium did not answer {method}")

    def seen(self, method: str, sid: str) -> bool:
        return any(e.get("method") == method and e.get("sessionId") == sid for e in self.events)

    def pump(self, wait_s: float) -> None:
        ready, _, _ = select.select([self.into], [], [], wait_s)
        if not ready:
            return
        chunk = os.read(self.into, 1 << 20)
        if not chunk:
            raise RuntimeError("chromium closed its DevTools pipe")
        self.buf += chunk
        while b"\0" in self.buf:
            raw, self.buf = self.buf.split(b"\0", 1)
            self.events.append(json.loads(raw))
