"""Headless Chromium driven through its DevTools protocol, for the tests that open the
grader's pages as a TA would (``tests/scenarios/test_browser.py``, the class report's test in
``tests/grader/reports/test_report.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest


def chromium_path() -> str:
    path = shutil.which(os.environ.get("CHROMIUM") or "chromium")
    if not path:
        pytest.fail(
            "Chromium not found: the browser test needs Debian's chromium (`make browser-tools` "
            "installs it as root on Debian/Ubuntu: apt-get install chromium), or CHROMIUM=/path"
        )
    return path


CLICK_SCRIPT_LINKS = """Array.from(document.querySelectorAll('a[href]'))
  .filter(a => a.protocol === 'javascript:')
  .map(a => { a.click(); return a.getAttribute('href').slice(0, 50); })"""


class Browser:
    """Headless Chromium driven through its DevTools protocol (one page)."""

    def __init__(self, tmp: Path):
        import websocket  # websocket-client, which jupyter_server depends on

        profile = tmp / "chromium-profile"
        cmd = [
            chromium_path(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-quic", f"--user-data-dir={profile}", "--remote-debugging-port=0",
            "about:blank",
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.time() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.time() > deadline or self.proc.poll() is not None:
                self.close()
                pytest.fail(f"{cmd[0]} did not start (exit code {self.proc.poll()})")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            pages = [t for t in json.load(resp) if t["type"] == "page"]
        self.ws = websocket.create_connection(
            pages[0]["webSocketDebuggerUrl"], timeout=60, suppress_origin=True
        )
        self.next_id = 0

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def eval(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def visit(self, url: str, settle: float = 1.5) -> dict:
        """Open ``url``, let its scripts run, click its ``javascript:`` links, let those run;
        return what the page showed: its text and the links clicked."""
        self.call("Page.navigate", url=url)
        deadline = time.time() + 60
        while self.eval("document.readyState") != "complete":
            assert time.time() < deadline, f"{url} did not load"
            time.sleep(0.2)
        time.sleep(settle)
        text = self.eval("document.body ? document.body.innerText : ''") or ""
        clicked = self.eval(CLICK_SCRIPT_LINKS) or []
        time.sleep(settle)
        return {"text": text, "clicked": clicked}

    def blank(self) -> None:
        self.call("Page.navigate", url="about:blank")
        time.sleep(0.3)

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
