"""``pebench report --png PATH``: a PNG of the top of a rendered page, taken by headless Chromium.

The README shows the top of the shipped leaderboard as an image (issue 29, item 5); this renders it from the page
itself rather than by hand, so the picture is the page. Chromium's own ``--screenshot`` mode loads the page from
``file://`` and writes the visible area of a window of ``width`` x ``height`` CSS pixels (the page is
self-contained, so nothing is fetched). A machine without Chromium gets a one-line error naming the package.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

from pebench.errors import PebenchError

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
"""Executables tried, in order."""


def find_browser() -> str:
    """The first Chromium-family executable on PATH, or a one-line error."""
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    raise PebenchError("--png needs Chromium on PATH (one of " + ", ".join(BROWSERS) + "; Debian: apt-get install "
                       "chromium)")  # fmt: skip


def parse_size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` of ``--png-size``, or a one-line error."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise PebenchError(f"--png-size {text!r}: give WIDTHxHEIGHT in pixels, e.g. 1280x900") from None
    return w, h


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG file, from its IHDR chunk; a one-line error for anything else."""
    head = path.read_bytes()[:24]
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise PebenchError(f"{path} is not a PNG image")
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def screenshot(page: Path, output: Path, width: int = 1280, height: int = 900, timeout: float = 120.0) -> Path:
    """Write a PNG of the top ``width`` x ``height`` CSS pixels of the HTML file ``page`` to ``output``."""
    if width < 100 or height < 100:
        raise PebenchError(f"--png-size {width}x{height}: width and height must be at least 100 pixels")
    browser = find_browser()
    output = output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pebench-chromium-") as profile:
        tmp = Path(profile) / "shot.png"
        cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--disable-dev-shm-usage", "--force-device-scale-factor=1", f"--user-data-dir={profile}/user",
               f"--window-size={width},{height}", f"--screenshot={tmp}", page.resolve().as_uri()]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise PebenchError(f"{Path(browser).name} took more than {timeout:.0f} s to render {page}") from None
        if not tmp.is_file():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise PebenchError(f"{Path(browser).name} wrote no screenshot of {page} (exit {proc.returncode}): {last}")
        png_size(tmp)
        shutil.move(str(tmp), output)
    return output
