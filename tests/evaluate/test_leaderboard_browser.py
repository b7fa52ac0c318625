"""The built leaderboard page in a real browser: Debian's chromium, driven by chromedriver over plain WebDriver.

WebDriver is JSON over HTTP, so the test speaks it with urllib (no selenium). It opens the page from file://,
reads the numbers in the table, clicks column headers and checks the new row order, and scrolls a table wider
than the window to its last column. `.ci/run` installs
`chromium` and `chromium-driver`; where they are missing the test is skipped and says which is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.evaluate.leaderboard_support import board as make_board
from tests.evaluate.leaderboard_support import cli, expected_pass1, ok

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver key of an element reference
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1280,1100"]


def _browser() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    missing = [name for name, path in (("chromium", chromium), ("chromedriver (chromium-driver)", driver)) if not path]
    if missing and os.environ.get("STATEEVAL_REQUIRE_BROWSER") == "1":  # .ci/run could install one: a bug
        pytest.fail(f"{' and '.join(missing)} not found although .ci/run installed chromium and chromium-driver")
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed: `apt-get install -y chromium chromium-driver` "
                    "(.ci/run does) to test the leaderboard page in a real browser")
    return chromium, driver


class WebDriver:
    """The few W3C WebDriver commands the test needs, over HTTP to a chromedriver on loopback."""

    def __init__(self, driver: str, chromium: str, profile: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.log = open(profile.parent / "chromedriver.log", "w")
        self.proc = subprocess.Popen([driver, f"--port={port}"], stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{port}"
        self.session = None
        deadline = time.monotonic() + 30
        while True:
            try:
                if self._call("GET", "/status")["ready"]:
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError(f"chromedriver did not start; see {self.log.name}")
            time.sleep(0.1)
        caps = {"browserName": "chrome", "goog:chromeOptions": {
            "binary": chromium, "args": [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]}}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return json.loads(resp.read())["value"]
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"WebDriver {method} {path}: {exc.read().decode()[:500]}") from exc

    def cmd(self, method: str, path: str, body: dict | None = None):
        return self._call(method, f"/session/{self.session}{path}", body)

    def get(self, url: str) -> None:
        self.cmd("POST", "/url", {"url": url})

    def find(self, css: str) -> list[str]:
        return [e[ELEMENT] for e in self.cmd("POST", "/elements", {"using": "css selector", "value": css})]

    def click(self, element: str) -> None:
        self.cmd("POST", f"/element/{element}/click", {})

    def text(self, element: str) -> str:
        return self.cmd("GET", f"/element/{element}/text")

    def attribute(self, element: str, name: str) -> str | None:
        return self.cmd("GET", f"/element/{element}/attribute/{name}")

    def execute(self, script: str, *args):
        """Runs `script` (a function body; its arguments in `arguments`) in the page; returns what it returns."""
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def resize(self, width: int, height: int) -> None:
        self.cmd("POST", "/window/rect", {"width": width, "height": height})

    def screenshot(self, path: Path) -> None:
        import base64

        path.write_bytes(base64.b64decode(self.cmd("GET", "/screenshot")))

    def close(self) -> None:
        try:
            if self.session:
                self.cmd("DELETE", "")
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.log.close()


@pytest.fixture(scope="module")
def page(small_dataset, sandbox, tmp_path_factory):
    chromium, driver = _browser()
    lb = make_board(Path(small_dataset), sandbox, tmp_path_factory)
    out = tmp_path_factory.mktemp("site")
    ok(cli("evaluate.leaderboard", "build", "--out", out, "--root", lb.root))
    browser = WebDriver(driver, chromium, tmp_path_factory.mktemp("chromium") / "profile")
    try:
        browser.get((out / "index.html").as_uri())
        yield browser, lb, out
    finally:
        browser.close()


V1 = 'table.board[data-version="v1.0.0"]'


def rows(browser: WebDriver, table: str = V1) -> list[dict[str, str]]:
    """The table as the browser shows it now: one {column key: visible text} per row, in order."""
    out = []
    for row in browser.find(f"{table} tbody tr"):
        cells = browser.cmd("POST", f"/element/{row}/elements", {"using": "css selector", "value": "td"})
        out.append({browser.attribute(c[ELEMENT], "data-key"): browser.text(c[ELEMENT]) for c in cells})
    return out


def header(browser: WebDriver, key: str, table: str = V1) -> str:
    (th,) = browser.find(f'{table} th[data-key="{key}"]')
    return th


def test_page_shows_the_validated_numbers(page):
    browser, lb, _ = page
    assert browser.cmd("GET", "/title") == "StateEval leaderboard"
    shown = rows(browser)
    assert [r["model"] for r in shown] == ["Reference replay", "Zeta-7B", "Beta-70B"]
    expected = [f"{100 * expected_pass1(lb.submissions[k]):.1f}" for k in ("reference", "zeta", "beta")]
    assert expected == ["100.0", "66.7", "50.0"]
    shown_pass1 = [r["pass1"].split(" [")[0] for r in shown]  # each with its interval: "66.7 [39.1, 86.2]"
    assert shown_pass1 == expected and [r["pass1-tensor"].split(" [")[0] for r in shown] == expected
    assert [r["pass1"] for r in shown] == ["100.0 [75.8, 100.0]", "66.7 [39.1, 86.2]", "50.0 [25.4, 74.6]"]
    assert [r["rank"] for r in shown] == ["1", "2", "3"] and [r["ranks"] for r in shown] == ["1–2", "1–3", "2–3"]
    assert [r["parameters"] for r in shown] == ["–", "7B", "70B"]
    assert {r["version"] for r in shown} == {"v1.0.0"}
    # the other dataset version is its own table, never ranked with these rows
    v2 = rows(browser, 'table.board[data-version="v2.0.0"]')
    assert [(r["rank"], r["model"], r["pass1"].split(" [")[0]) for r in v2] == [("1", "Reference replay v2", "100.0")]
    bars = browser.find('section[data-version="v1.0.0"] svg.chart rect.bar')
    assert sorted((browser.attribute(b, "data-model"), browser.attribute(b, "data-scenario"),
                   browser.attribute(b, "data-value")) for b in bars) == sorted(
        (m, s, v) for m, v in zip(["Reference replay", "Zeta-7B", "Beta-70B"], expected) for s in ("overall", "tensor"))


def test_clicking_headers_sorts_the_rows(page, tmp_path):
    browser, _, out = page
    browser.get((out / "index.html").as_uri())  # fresh order, whatever ran before

    browser.click(header(browser, "model"))  # text: A to Z first
    assert [r["model"] for r in rows(browser)] == ["Beta-70B", "Reference replay", "Zeta-7B"]
    assert browser.attribute(header(browser, "model"), "aria-sort") == "ascending"

    browser.click(header(browser, "pass1"))  # numbers: best first
    assert [r["pass1"].split(" [")[0] for r in rows(browser)] == ["100.0", "66.7", "50.0"]
    assert browser.attribute(header(browser, "model"), "aria-sort") is None
    browser.click(header(browser, "pass1"))  # again: reversed
    assert [r["pass1"].split(" [")[0] for r in rows(browser)] == ["50.0", "66.7", "100.0"]
    assert browser.attribute(header(browser, "pass1"), "aria-sort") == "ascending"

    browser.click(header(browser, "parameters"))  # 70B > 7B as numbers (as text "70B" < "7B"); unknown last
    assert [r["parameters"] for r in rows(browser)] == ["70B", "7B", "–"]
    browser.click(header(browser, "parameters"))
    assert [r["parameters"] for r in rows(browser)] == ["7B", "70B", "–"]

    # sorting one version's table leaves the other alone
    assert [r["model"] for r in rows(browser, 'table.board[data-version="v2.0.0"]')] == ["Reference replay v2"]
    browser.screenshot(tmp_path / "sorted.png")
    assert (tmp_path / "sorted.png").stat().st_size > 10_000


def test_page_works_offline_as_one_file(page, tmp_path):
    browser, _, out = page
    alone = tmp_path / "copy.html"  # nothing beside it: the page needs no other file and no network
    alone.write_text((out / "index.html").read_text())
    browser.get(alone.as_uri())
    browser.click(header(browser, "rank"))  # rank: 1 first
    assert [r["rank"] for r in rows(browser)] == ["1", "2", "3"]
    browser.click(header(browser, "rank"))
    assert [r["rank"] for r in rows(browser)] == ["3", "2", "1"]


def test_every_column_can_be_reached_in_a_narrow_window(page, tmp_path):
    """At 1,300 pixels the tables are wider than the page's column: each must scroll within its own box (the
    page itself does not scroll sideways), and scrolling the box to its end brings its last header cell, Date,
    into view, inside the box and inside the window."""
    browser, _, out = page
    browser.resize(1300, 900)
    try:
        browser.get((out / "index.html").as_uri())
        for version in ("v1.0.0", "v2.0.0"):  # v2.0.0 holds one validated submission
            box = browser.execute("""
                var box = document.querySelector('table.board[data-version="' + arguments[0] + '"]').parentElement;
                var before = {box: box.className, scrollWidth: box.scrollWidth, clientWidth: box.clientWidth,
                              window: window.innerWidth, page: document.documentElement.scrollWidth,
                              pageClient: document.documentElement.clientWidth};
                box.scrollLeft = box.scrollWidth;
                var last = box.querySelector('thead th:last-child'), cell = last.getBoundingClientRect();
                var frame = box.getBoundingClientRect();
                before.last = last.getAttribute('data-key');
                before.cell = [cell.left, cell.right];
                before.frame = [frame.left, frame.right];
                before.scrolled = box.scrollLeft;
                return before;""", version)
            assert box["window"] == 1300 and box["box"] == "table-scroll"
            assert box["scrollWidth"] > box["clientWidth"], box  # the table is wider than its box: it overflows
            assert box["page"] <= box["pageClient"], box  # ... into the box, not past the page's right edge
            assert box["scrolled"] == box["scrollWidth"] - box["clientWidth"] > 0, box
            assert box["last"] == "date"
            left, right = box["cell"]
            assert box["frame"][0] <= left < right <= box["frame"][1] + 0.5 and right <= box["window"], box
        browser.screenshot(tmp_path / "narrow.png")
        assert (tmp_path / "narrow.png").stat().st_size > 10_000
    finally:
        browser.resize(1280, 1100)
