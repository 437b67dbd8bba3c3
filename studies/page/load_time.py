"""The leaderboard page's size and load time in headless Chromium (issue 65, item 3).

    python studies/page/load_time.py docs/leaderboard.html [--repeats 5] [--width 1280]

Opens the page from ``file://`` in headless Chromium (Selenium, as tests/report/test_browser.py) at the given width,
``--repeats`` times in one browser, and prints for each load the Navigation Timing marks (ms after the navigation
started): DOM interactive, DOMContentLoaded end (the page's script has run: sorting and filtering work) and the load
event end; then the medians, the file size, the number of DOM elements and whether the page scrolls sideways. Run it
on a quiet machine (no training beside it): it measures this machine's CPU.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
from pathlib import Path

MARKS = ("domInteractive", "domContentLoadedEventEnd", "loadEventEnd")


def measure(page: Path, repeats: int, width: int) -> dict:
    """Per load, the marks of :data:`MARKS`; the page's element count and scroll width."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))))
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},1000"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        loads = []
        for _ in range(repeats):
            driver.get("about:blank")
            driver.get(page.resolve().as_uri())
            t = driver.execute_script("const n = performance.getEntriesByType('navigation')[0]; return {"
                                      + ", ".join(f"{m}: n.{m}" for m in MARKS) + "};")  # fmt: skip
            loads.append({m: round(float(t[m])) for m in MARKS})
        elements = driver.execute_script("return document.getElementsByTagName('*').length;")
        scroll = driver.execute_script("return document.documentElement.scrollWidth;")
    finally:
        driver.quit()
    return {"loads": loads, "elements": elements, "scroll_width": scroll}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--width", type=int, default=1280)
    args = parser.parse_args()
    out = measure(args.page, args.repeats, args.width)
    for i, load in enumerate(out["loads"], 1):
        print(f"load {i}: " + ", ".join(f"{m} {v} ms" for m, v in load.items()))
    medians = {m: statistics.median(x[m] for x in out["loads"]) for m in MARKS}
    print("median: " + ", ".join(f"{m} {v:.0f} ms" for m, v in medians.items()))
    print(f"size {args.page.stat().st_size / 1e6:.2f} MB, {out['elements']} elements, scroll width "
          f"{out['scroll_width']} px at {args.width} px, {os.cpu_count()} CPUs")  # fmt: skip


if __name__ == "__main__":
    main()
