"""The leaderboard in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``) through
Selenium. Skipped only where no Chromium is installed; where one is, Selenium must be installed too (``.[dev]``)."""

import shutil
from pathlib import Path

import pytest
from test_report import EVIL, make_db

from pebench.report import render_report

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="no Chromium/chromedriver on PATH (Debian: apt-get install chromium chromium-driver)",
)


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    args = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,1000")
    for arg in args:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def leaderboard_names(driver):
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")
    return [row.find_elements(By.TAG_NAME, "td")[1].text.replace("partial", "").strip() for row in rows]


def test_page_in_headless_chromium(tmp_path, browser):
    from selenium.webdriver.common.by import By

    url, _ = make_db(f"sqlite:///{tmp_path / 'r.db'}")
    page = render_report(url, tmp_path / "lb.html").path
    browser.get(Path(page).resolve().as_uri())
    browser.execute_script("window.__pebench_errors = []; window.addEventListener('error', "
                           "e => window.__pebench_errors.push(String(e.message)));")  # fmt: skip

    ranked = ["solo", EVIL, "alpha", "beta"]  # by OOD score (see test_report)
    assert leaderboard_names(browser) == ranked
    assert browser.execute_script("return typeof alert === 'function' && document.scripts.length") == 1

    header = browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table thead th")[1]  # "encoding"
    header.click()
    assert leaderboard_names(browser) == sorted(ranked, key=str.lower)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert leaderboard_names(browser) == sorted(ranked, key=str.lower, reverse=True)

    box = browser.find_element(By.ID, "filter")
    box.send_keys("alp")
    visible = [r for r in browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr") if r.is_displayed()]
    assert len(visible) == 1 and "alpha" in visible[0].text
    browser.execute_script("var b = document.getElementById('filter'); b.value = ''; "
                           "b.dispatchEvent(new Event('input'));")  # fmt: skip
    assert len(leaderboard_names(browser)) == 4

    shot = tmp_path / "leaderboard.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    errors += browser.execute_script("return window.__pebench_errors")
    assert errors == [], errors
