"""The documentation site (mkdocs.yml over docs/) builds with ``mkdocs build --strict``, as CI builds it.

Strict mode fails on every broken link between the docs' pages and on every missing anchor. A relative link that
leaves docs/ (``../studies/...``, ``../README.md``: the dated studies live in the repository, not on the site) is
logged at INFO by mkdocs.yml's ``validation.links.not_found``, which cannot tell such a link from a broken one inside
docs/; this test tells them apart: a link into docs/ must be a page of the site, a link out of it must name a file of
the repository.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# what the docs extra installs, by the module each provides (mkdocstrings' Python handler: mkdocstrings_handlers)
MISSING = [pkg for pkg, module in {"mkdocs": "mkdocs", "mkdocs-material": "material",
                                   "mkdocstrings[python]": "mkdocstrings_handlers"}.items()
           if importlib.util.find_spec(module) is None]
NOT_FOUND = re.compile(r"Doc file '([^']+)' contains a link '([^']+)', but the target .*?is not found among "
                       r"documentation files")


@pytest.mark.slow
@pytest.mark.skipif(bool(MISSING), reason=f"the docs extra is not installed (pip install -e \".[docs]\"): "
                                          f"{', '.join(MISSING)} missing")
def test_docs_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log

    broken = []
    for page, link in NOT_FOUND.findall(log):
        target = (DOCS / page).parent / link.split("#", 1)[0]
        inside = target.resolve().is_relative_to(DOCS.resolve())
        if inside or not target.exists():  # in docs/: not a page of the site; outside: no such repository file
            broken.append(f"{page}: {link}")
    assert not broken, "links that resolve neither on the site nor in the repository:\n" + "\n".join(broken)

    assert (site / "index.html").is_file()
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("PositionalEncoding", "register_kernel", "AttentionCall", "assert_conforms"):
        assert name in api, f"the API page does not name {name}"
    for page in ("defaults", "report", "extending", "scale-out", "database", "speed", "findings", "reproducibility"):
        assert (site / page / "index.html").is_file(), f"no page {page}/ in the site"
    # the nav's "citing the reference" is this section's anchor
    assert 'id="exporting-a-table-and-citing-the-reference"' in (site / "report" / "index.html").read_text("utf-8")
