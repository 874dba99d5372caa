"""Headless Chromium (Debian's package, installed by `setup.sh --test-builds`) opening a
page from disk, as a reader would: the DOM after its scripts ran, every console message
(an error in the page's JavaScript is one), and a screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=8000"]


@dataclass
class Rendered:
    dom: str
    console: list[str]  # what the page's scripts logged, errors included


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed: `./setup.sh --test-builds` installs Debian's package")
    return path


def render(page: Path, screenshot: Path | None = None, width: int = 1300, height: int = 4200) -> Rendered:
    """Open `page` offline (file://), let its scripts run, return the DOM and the console; optionally a screenshot."""
    exe = chromium()
    p = subprocess.run([exe, *FLAGS, "--enable-logging=stderr", "--v=0", "--dump-dom", page.resolve().as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    console = [m.group(1) for m in re.finditer(r":CONSOLE[^\]]*\] (.*)", p.stderr)]
    if screenshot is not None:
        s = subprocess.run([exe, *FLAGS, f"--window-size={width},{height}", f"--screenshot={screenshot}",
                            page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
        assert s.returncode == 0 and screenshot.exists(), s.stderr[-2000:]
    return Rendered(p.stdout, console)


def figure(dom: str, name: str) -> str:
    """The rendered DOM of one figure (a `data-figure` div of the report)."""
    start = dom.index(f"data-figure=\"{name}\"")
    end = dom.find("data-figure=", start + 20)
    return dom[start:end if end > 0 else len(dom)]


def drawn_traces(fragment: str) -> int:
    """Plotly's drawn scatter traces that hold points or a line with data (each trace's
    markup runs to the next trace's)."""
    chunks = re.split(r'<g class="trace scatter', fragment)[1:]
    return sum(1 for c in chunks if re.search(r'<path class="(point|js-line)[^"]*"[^>]* d="M[0-9.-]', c))
