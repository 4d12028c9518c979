"""Headless Chromium for checking report pages (the report tests, benchmarks/report.py): the
system's Chromium (Debian's ``chromium``, which scripts/setup.sh installs) driven by Playwright
(the ``dev`` extra) — never a browser Playwright downloads (docs/reports.md, "Testing a page in
a browser")."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: a quiet headless Chromium that talks to no service of its own
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync")


def missing() -> str | None:
    """What is missing to open a page (Playwright, Chromium), or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright (pip install -e '.[dev]')"
    if chromium() is None:
        return "Chromium (scripts/setup.sh installs it)"
    return None


def chromium() -> str | None:
    """The system's Chromium, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def launch() -> Iterator[Any]:
    """A Playwright browser on the system's Chromium, closed on exit (see :func:`missing`)."""
    from playwright.sync_api import sync_playwright

    exe = chromium()
    if exe is None:
        raise RuntimeError("Chromium is not installed (scripts/setup.sh installs it)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=list(CHROMIUM_ARGS))
        try:
            yield browser
        finally:
            browser.close()
