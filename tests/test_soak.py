"""The soak, small: ``bench/soak.py --docs 50`` (local engine) must pass every check.

50 distinct complaints made from the annotated ones, one real ``argus extract`` run (the offline
default) SIGTERM'd at a seeded point and resumed with ``--skip-existing``: every complaint has exactly
one EKG (0 lost, 0 written twice, by inotify), every EKG validates, ``summary.csv`` has one row per
complaint, nothing temporary is left, no process is left running. ``ARGUS_SOAK_DOCS`` sets another
number. The 1,000-complaint soak and the Ray variant
(``--engine ray``: an actor SIGKILLed as well) are run by hand (see ``bench/soak.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import needs_data

PROJECT = Path(__file__).resolve().parent.parent


@needs_data
@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the soak watches the run through /proc and inotify")
def test_a_small_soak_loses_nothing_and_writes_nothing_twice(tmp_path):
    docs = int(os.environ.get("ARGUS_SOAK_DOCS", "50"))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(PROJECT / "bench" / "soak.py"), "--docs", str(docs), "--keep", str(tmp_path)],
                          capture_output=True, text=True, cwd=PROJECT, timeout=300 + 60 * docs)
    took = time.perf_counter() - t0
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-2000:]
    m = re.search(r"^SOAK docs=(\d+) ekgs=(\d+) lost=(\d+) twice=(\d+) invalid=(\d+) leftover=(\d+) .* ok=yes$", out, re.M)
    assert m, out[-4000:]
    assert m.groups() == (str(docs), str(docs), "0", "0", "0", "0"), m.group(0)
    assert re.search(r"\| run 1: exit status after SIGTERM \| 143 ", out), out[-4000:]
    assert re.search(r"\| run 2: exit status \| 0 ", out), out[-4000:]
    print(f"soak of {docs} complaints: {took:.0f} s")
