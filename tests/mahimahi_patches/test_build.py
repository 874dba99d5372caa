"""The series applies cleanly to the upstream commit it records, builds, and the
build installs mm-link setuid root with a record of what went into it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess

from mmlab import REPO, run_as

from continuum.runtime import WORKLOAD_USER

BUILD = REPO / "mahimahi-patches" / "build"


def test_the_series_applies_to_the_recorded_commit_and_builds(upstream_source, tmp_path):
    prefix = tmp_path / "prefix"
    os.chmod(tmp_path, 0o755)  # its user runs the binary from here
    p = subprocess.run([str(BUILD), "--source", str(upstream_source), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    patches = sorted((REPO / "mahimahi-patches").glob("[0-9][0-9][0-9][0-9]-*.patch"))
    assert len(patches) == 5
    for patch in patches:  # each applied, in order
        assert f"    {patch.name}\n" in p.stdout
    commit = re.search(r'UPSTREAM_COMMIT="([0-9a-f]{40})"', BUILD.read_text()).group(1)
    record = json.loads((prefix / "share" / "continuum" / "mahimahi.json").read_text())
    assert record["commit"] == commit
    assert [(x["name"], x["sha256"]) for x in record["patches"]] == \
        [(x.name, hashlib.sha256(x.read_bytes()).hexdigest()) for x in patches]
    mm = prefix / "bin" / "mm-link"
    st = mm.stat()
    assert st.st_uid == 0 and st.st_mode & 0o4000, "installed setuid root, as upstream installs it"
    assert record["binary_sha256"] == hashlib.sha256(mm.read_bytes()).hexdigest()
    # the patched options are there (its usage lists them; mm-link refuses to run as root)
    usage = run_as(WORKLOAD_USER, [str(mm)], timeout=10)
    for option in ("--ready-fd", "--no-command", "--pass-through", "--bypass"):
        assert option in usage.stderr, usage.stderr


def test_a_wrong_source_is_named_and_nothing_is_installed(tmp_path):
    prefix = tmp_path / "prefix"
    p = subprocess.run([str(BUILD), "--source", str(tmp_path / "nowhere"), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "nowhere does not exist" in p.stderr and "github.com/ravinet/mahimahi" in p.stderr
    assert not (prefix / "bin" / "mm-link").exists()
    (tmp_path / "notgit").mkdir()
    p = subprocess.run([str(BUILD), "--source", str(tmp_path / "notgit"), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "is not a git repository" in p.stderr
