"""Screenshot a job's history page in the Temporal UI (for the README); not part of the tests.

Needs Debian's chromium and the `playwright` package (any venv), and a dev stack with the
sample job: `make dev`, then `python docs/screenshot.py`. Playwright's own browser download
cannot reach the internet here, so it drives the system Chromium.
"""

from __future__ import annotations

import sys

from playwright.sync_api import sync_playwright

URL = "http://127.0.0.1:8233/namespaces/default/workflows/vcjob%2Fdefault%2Fsample"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main(url: str = URL, out: str = "docs/job-history.png") -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1300})
        page.goto(url)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(2000)  # the event history renders after its last fetch
        page.screenshot(path=out, full_page=False)
        browser.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
