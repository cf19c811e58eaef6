"""Headless Chromium for the dashboard tests: the browser, a strict context, screenshots and a
layout check.

The layout check measures the rendered page rather than comparing pixels (fonts and
antialiasing differ between machines; overlaps and cut-off text do not): in ``main``, no two
sibling boxes overlap, no child box or line of text sticks out of its parent (unless the parent
scrolls on purpose), neither the page nor anything but a ``<pre>`` in it scrolls sideways, and
in every chart the text labels neither overlap nor leave the chart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A fresh browser profile. Any console or page error fails the test (a blocked or missing
    resource logs one), and so does any request that leaves the test server: pages work offline.
    """
    opened = browser.new_context(viewport={"width": 1400, "height": 1000})
    opened.set_default_timeout(5000)
    opened.problems = []
    requested: list[str] = []
    opened.on("weberror", lambda error: opened.problems.append(str(error.error)))
    opened.on(
        "console", lambda message: message.type == "error" and opened.problems.append(message.text)
    )
    opened.on("request", lambda request: requested.append(request.url))
    yield opened
    opened.close()
    assert opened.problems == [], opened.problems
    elsewhere = [url for url in requested if not url.startswith(("http://127.0.0.1:", "data:"))]
    assert requested and elsewhere == [], elsewhere


def shot(page: Any, name: str) -> Path:
    """A full-page screenshot in ``test-artifacts/``, for people to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


_LAYOUT_PROBLEMS = """
() => {
  const problems = [];
  const SLACK = 1.5;
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.classList.length ? "." + Array.from(el.classList).join(".") : "");
  const shown = (el) => {
    const style = getComputedStyle(el);
    return style.display !== "none" && style.visibility !== "hidden" &&
      Array.from(el.getClientRects()).some((r) => r.width > 0 && r.height > 0);
  };
  const scrolls = (el) => {
    const style = getComputedStyle(el);
    return ["auto", "scroll", "hidden"].includes(style.overflowX) ||
      ["auto", "scroll", "hidden"].includes(style.overflowY);
  };
  const inside = (r, box) => r.left >= box.left - SLACK && r.right <= box.right + SLACK &&
    r.top >= box.top - SLACK && r.bottom <= box.bottom + SLACK;
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > SLACK &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > SLACK;
  const main = document.querySelector("main");
  for (const parent of [main, ...main.querySelectorAll("*")]) {
    if (parent.closest("svg") || !shown(parent) || parent.closest("details:not([open])")) continue;
    // An inline element's box is its text's line box: what it holds is checked against the
    // block it sits in, where sticking out would be visible.
    const inline = getComputedStyle(parent).display === "inline";
    const box = parent.getBoundingClientRect();
    const kids = Array.from(parent.children).filter(shown);
    for (let i = 0; i < kids.length; i++) {
      const rects = Array.from(kids[i].getClientRects());
      if (!inline && !scrolls(parent) && !rects.every((r) => inside(r, box)))
        problems.push(name(kids[i]) + " sticks out of " + name(parent));
      for (let j = i + 1; j < kids.length; j++) {
        const others = Array.from(kids[j].getClientRects());
        if (rects.some((a) => others.some((b) => overlap(a, b))))
          problems.push(name(kids[i]) + " overlaps " + name(kids[j]) + " in " + name(parent));
      }
    }
    // A container that scrolls on purpose may hold more than it shows, except sideways: a
    // table that needs a scrollbar at this width has columns the reader cannot see.
    if (scrolls(parent) && parent.tagName !== "PRE" && parent.scrollWidth > parent.clientWidth + SLACK)
      problems.push(name(parent) + " scrolls sideways: " + parent.scrollWidth + " > " + parent.clientWidth);
    if (inline || scrolls(parent)) continue;
    for (const node of parent.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE || !node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) {
        if (r.width > 0 && !inside(r, box))
          problems.push("text '" + node.textContent.trim().slice(0, 30) + "' is cut by " + name(parent));
      }
    }
  }
  for (const svg of main.querySelectorAll("svg")) {
    const box = svg.getBoundingClientRect();
    const labels = Array.from(svg.querySelectorAll("text")).map((t) => [t, t.getBoundingClientRect()]);
    for (let i = 0; i < labels.length; i++) {
      if (!inside(labels[i][1], box)) problems.push("chart label '" + labels[i][0].textContent + "' is cut");
      for (let j = i + 1; j < labels.length; j++)
        if (overlap(labels[i][1], labels[j][1]))
          problems.push("chart labels '" + labels[i][0].textContent + "' and '" + labels[j][0].textContent + "' overlap");
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth)
    problems.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " > " + window.innerWidth);
  return problems;
}
"""


def layout_problems(page: Any) -> list[str]:
    """What is laid out wrong on the page as rendered: overlaps, overflow, cut text (see above)."""
    return page.evaluate(_LAYOUT_PROBLEMS)
