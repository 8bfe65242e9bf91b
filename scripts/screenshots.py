"""Take README screenshots of the policy list, the editor and the TrainJobs list from a running portal.

Usage: python scripts/screenshots.py [--base-url http://127.0.0.1:8000] [--user alice --password …] [--out docs/img]
Needs Debian chromium at /usr/bin/chromium (Playwright's own browser download does not work offline).
Returns 0 on success, 2 when chromium is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def take(page, base_url: str, out: Path, *, policy: str | None = None) -> list[Path]:
    """Save list.png, editor.png (and detail.png when `policy` is given) from a logged-in page; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    page.goto(f"{base_url}/runtimes/")
    page.screenshot(path=str(out / "list.png"), full_page=True)
    shots.append(out / "list.png")
    target = f"{base_url}/runtimes/{policy}/edit/" if policy else f"{base_url}/runtimes/new/"
    page.goto(target)
    # Show the scheduling part of the form beside the (sticky) YAML editor.
    page.evaluate(
        "window.scrollTo(0, document.querySelector('.sched-switch').getBoundingClientRect().top + window.scrollY - 72)"
    )
    page.screenshot(path=str(out / "editor.png"), full_page=False)
    shots.append(out / "editor.png")
    if policy:
        page.goto(f"{base_url}/runtimes/{policy}/")
        page.screenshot(path=str(out / "detail.png"), full_page=True)
        shots.append(out / "detail.png")
    return shots


def take_jobs(page, base_url: str, out: Path) -> list[Path]:
    """Save jobs.png (the TrainJobs list) from a logged-in page; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    page.goto(f"{base_url}/jobs/")
    page.screenshot(path=str(out / "jobs.png"), full_page=True)
    return [out / "jobs.png"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--user", default="alice")
    parser.add_argument("--password", default="alice-password-1")
    parser.add_argument("--policy", default=None, help="policy whose editor and detail page to capture")
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--jobs", action="store_true", help="also capture the TrainJobs list (jobs.png)")
    parser.add_argument("--dark", action="store_true", help="emulate a dark colour scheme")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} not found; install Debian chromium", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(
            viewport={"width": 1440, "height": 900}, color_scheme="dark" if args.dark else "light"
        )
        page.goto(f"{args.base_url}/login/")
        page.fill("#id_username", args.user)
        page.fill("#id_password", args.password)
        page.click("button[type=submit]")
        for path in take(page, args.base_url.rstrip("/"), Path(args.out), policy=args.policy):
            print(path)
        if args.jobs:
            for path in take_jobs(page, args.base_url.rstrip("/"), Path(args.out)):
                print(path)
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
