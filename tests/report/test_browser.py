"""The leaderboard in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``) through
Selenium. Skipped only where no Chromium is installed; where one is, Selenium must be installed too (``.[dev]``)."""

import shutil
from pathlib import Path

import pytest
from test_report import EVIL, make_db

from pebench.report import render_report

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
DRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None or DRIVER is None,
        reason="no Chromium/chromedriver on PATH (Debian: apt-get install chromium chromium-driver)",
    ),
    pytest.mark.slow,  # a browser: the inner loop (-m "not slow") leaves this module out
]


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

    ranked = [EVIL, "alpha", "beta", "solo"]  # by OOD score (see test_report)
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


def _visible(driver, selector):
    from selenium.webdriver.common.by import By

    return [e for e in driver.find_elements(By.CSS_SELECTOR, selector) if e.is_displayed()]


def _set_filter(driver, text):
    driver.execute_script("var b = document.getElementById('filter'); b.value = arguments[0]; "
                          "b.dispatchEvent(new Event('input'));", text)  # fmt: skip


def test_filter_legend_and_attention_hover_with_every_encoding(tmp_path, browser):
    """Every registered encoding on two tasks (synthetic scores): one small chart per family; the filter hides chart
    lines and charts left empty, not only table rows; a legend click highlights one encoding in every chart; sorting
    still works; hovering an attention map names the query, key and probability."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from pebench import encodings, store, tasks
    from pebench.report import attn, synthetic
    from pebench.report.families import family_of

    spec = synthetic.all_encodings_spec(seeds=1)
    url = f"sqlite:///{tmp_path / 'all.db'}"
    engine = store.open_db(url)
    synthetic.write_run(engine, synthetic.records(spec))
    engine.dispose()
    page = render_report(url, tmp_path / "all.html").path
    browser.get(Path(page).resolve().as_uri())
    # abacus and coupling need digit annotations, which k_back and lm do not provide: no results, as in a real run
    names = [n for n in encodings.available() if encodings.not_applicable(n, tasks.get("k_back")) is None]
    families = {family_of(n) for n in names}
    section = "#task-k-back"
    panels = _visible(browser, f"{section} .multiples .panel")
    assert len(panels) == len(families) == 6
    assert len(_visible(browser, f"{section} .s")) == len(names)

    # measured label widths: no text of any chart sticks out of its svg (e.g. the heatmap's longest row label)
    clipped = browser.execute_script("""
        var out = [];
        document.querySelectorAll('svg').forEach(function (svg) {
          var box = svg.getBoundingClientRect();
          svg.querySelectorAll('text').forEach(function (t) {
            var r = t.getBoundingClientRect();
            if (r.width && (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1
                            || r.bottom > box.bottom + 1)) { out.push(t.textContent); }
          });
        });
        return out;""")
    assert clipped == [], clipped

    # the filter: lines and legend rows of other encodings go, and so do the charts it empties
    _set_filter(browser, "alibi")
    assert [e.get_attribute("data-enc") for e in _visible(browser, f"{section} .s")] == ["alibi"]
    assert [e.get_attribute("data-family") for e in _visible(browser, f"{section} .panel")] == ["bias"]
    # the learning curves too: one training-loss line per task, and its validation lines at 1x and 2x
    assert len(_visible(browser, "#curves .s")) == 2 * 3
    assert len(_visible(browser, "#table-task-k-back tbody tr")) == 1
    _set_filter(browser, "rope")  # rope, lrope, drope, randomized_rope
    shown = {e.get_attribute("data-enc") for e in _visible(browser, f"{section} .s")}
    assert shown == {n for n in names if "rope" in n}
    assert {e.get_attribute("data-family") for e in _visible(browser, f"{section} .panel")} == {"rotary", "wrapper"}
    _set_filter(browser, "")
    assert len(_visible(browser, f"{section} .s")) == len(names)

    # a legend click highlights that encoding in every chart and dims the others; a second click undoes it
    def opacity(enc):
        series = browser.find_element(By.CSS_SELECTOR, f'{section} .s[data-enc="{enc}"]')
        return float(browser.execute_script("return getComputedStyle(arguments[0]).opacity", series))

    legend = browser.find_element(By.CSS_SELECTOR, f'{section} .lg[data-enc="alibi"]')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", legend)
    legend.click()
    assert opacity("alibi") == 1.0 and opacity("rope") < 0.5 and opacity("fire") < 0.5
    assert "hl" in browser.find_element(By.CSS_SELECTOR, '#task-lm .s[data-enc="alibi"]').get_attribute("class")
    assert legend.get_attribute("aria-pressed") == "true"
    legend.click()
    assert opacity("rope") == 1.0 and legend.get_attribute("aria-pressed") == "false"

    # sorting still works with the new column: "how far", descending first
    table = browser.find_element(By.ID, "table-task-k-back")
    header = [th for th in table.find_elements(By.CSS_SELECTOR, "thead th") if th.text.startswith("how far")][0]
    index = table.find_elements(By.CSS_SELECTOR, "thead th").index(header)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", header)  # not under the sticky filter
    header.click()
    keys = [r.find_elements(By.TAG_NAME, "td")[index].get_attribute("data-v")
            for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]  # fmt: skip
    numbers = [float(k) for k in keys if k]
    assert numbers == sorted(numbers, reverse=True) and keys[: len(numbers)] == [k for k in keys if k]

    # attention hover: query 20, key 3 of rope's head 0, and its probability from the page's data
    att = browser.find_element(By.CSS_SELECTOR, '#attention .att[data-enc="rope"]')
    img = att.find_elements(By.CSS_SELECTOR, "img.attmap")[0]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", img)
    t, size = spec.attention_tokens, img.size["width"] - 2  # a 1 px border
    i, j = 20, 3
    ActionChains(browser).move_to_element_with_offset(img, (j + 0.5) * size / t - size / 2,
                                                      (i + 0.5) * size / t - size / 2).perform()  # fmt: skip
    tip = browser.find_element(By.ID, "tip")
    p = attn.unpacked(img.get_attribute("data-p"), t)[i, j]
    assert p > 0.001
    assert tip.is_displayed() and tip.text.startswith("rope · head 0 · query 20 (token ")
    assert "→ key 3 (token " in tip.text and tip.text.endswith(f"p ≈ {p:.3f}" if p >= 0.01 else f"p ≈ {p:.2g}")
    ActionChains(browser).move_to_element_with_offset(img, size / 2 - 2, -size / 2 + 2).perform()  # top right
    assert tip.text.endswith(f"query 0 (token 0) → key {t - 1} (token {t - 1}): future position (masked)")
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == [], errors


def test_png_of_the_top_of_the_page(tmp_path, capsys):
    """``pebench report --png``: Chromium's own screenshot of the rendered page, at the window size asked for, and
    not a blank image (the leaderboard's dark text on its light background gives many distinct colours)."""
    from PIL import Image

    from pebench.cli import main
    from pebench.report.screenshot import png_size

    url, _ = make_db(f"sqlite:///{tmp_path / 'r.db'}")
    shot = tmp_path / "top.png"
    assert main(["report", "--db", url, "-o", str(tmp_path / "lb.html"), "--png", str(shot), "--png-size",
                 "800x600"]) == 0  # fmt: skip
    assert png_size(shot) == (800, 600) and "800x600 pixels" in capsys.readouterr().out
    colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50
    assert main(["report", "--db", url, "-o", str(tmp_path / "lb.html"), "--png", str(shot), "--png-size",
                 "big"]) == 2  # fmt: skip
    assert "give WIDTHxHEIGHT" in capsys.readouterr().err


def test_the_page_at_a_fields_size_fits_1280_pixels(tmp_path, browser):
    """Every registered encoding (44) on 50 tasks (issue 65): at a window 1280 px wide the page does not scroll
    sideways, the encoding x task overview (#overview) fits as it is, its row and task labels are at least 10 px,
    its rows follow the leaderboard and the filter box hides them, a click on a task sorts by it, and the task links
    wrap."""
    from selenium.webdriver.common.by import By

    from pebench import store
    from pebench.report import synthetic

    spec = synthetic.field_spec(44, 50, lengths=(64, 128), curve_points=2)
    url = f"sqlite:///{tmp_path / 'field.db'}"
    engine = store.open_db(url)
    synthetic.write_run(engine, synthetic.records(spec))
    engine.dispose()
    page = render_report(url, tmp_path / "field.html").path
    browser.set_window_size(1280, 1000)
    browser.get(Path(page).resolve().as_uri())
    assert browser.execute_script("return window.innerWidth") <= 1280
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
    overview = browser.find_element(By.ID, "overview")
    wrap = browser.execute_script("var w = arguments[0].parentNode; return [w.scrollWidth, w.clientWidth]", overview)
    assert wrap[0] <= wrap[1], wrap  # no scrolling inside its box either
    toc = browser.find_element(By.CSS_SELECTOR, "nav.toc")
    assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", toc)

    sizes = browser.execute_script("""
        var px = function (sel) { return Array.from(document.querySelectorAll(sel)).map(
          function (e) { return parseFloat(getComputedStyle(e).fontSize); }); };
        return {rows: px('#overview tbody td.text .enc'), tasks: px('#overview thead th.t span'),
                head: px('#overview thead th')};""")
    assert len(sizes["rows"]) == 44 and len(sizes["tasks"]) == 50
    assert min(sizes["rows"] + sizes["tasks"] + sizes["head"]) >= 10, sizes

    def rows(table="overview"):  # the names of the shown rows, in one call (a call per row is slow)
        return browser.execute_script("return Array.from(document.querySelectorAll(arguments[0])).filter("
                                      "function (r) { return r.offsetParent !== null; }).map("
                                      "function (r) { return r.querySelector('.enc').textContent; });",
                                      f"#{table} tbody tr")  # fmt: skip

    assert rows() == rows("leaderboard-table")
    _set_filter(browser, "rope")
    assert rows() and all("rope" in name for name in rows())
    assert len(rows()) == sum("rope" in name for name in spec.encodings)
    _set_filter(browser, "")
    assert len(rows()) == 44

    header = browser.find_elements(By.CSS_SELECTOR, "#overview thead th.t")[0]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", header)
    header.click()
    keys = browser.execute_script("return Array.from(document.querySelectorAll('#overview tbody td:nth-child(3)'))"
                                  ".map(function (td) { return td.getAttribute('data-v'); });")  # fmt: skip
    numbers = [float(k) for k in keys if k]
    assert numbers == sorted(numbers, reverse=True) and keys[: len(numbers)] == [k for k in keys if k]
    assert header.get_attribute("aria-sort") == "descending"
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == [], errors
