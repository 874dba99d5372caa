"""playbooks/ as a user with internet would run them, checked where they
cannot run here: ansible-lint's production profile and ansible-playbook's own
syntax check (k3s cannot be downloaded on this machine; the roles that do run
here are run for real in tests/hosts, and the pods of engine = "k3s" are
checked in tests/k3s)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed; ./setup.sh installs Debian's ansible-core and ansible-lint")


def test_ansible_lint_production_profile_is_clean():
    _need("ansible-lint")
    p = subprocess.run(["ansible-lint", "--nocolor"], cwd=PLAYBOOKS, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "production" in (p.stdout + p.stderr)


@pytest.mark.parametrize("playbook", ["site.yml", "k3s.yml", "srsran.yml", "srsran-5g.yml"])
def test_playbook_passes_the_syntax_check(playbook):
    _need("ansible-playbook")
    p = subprocess.run(["ansible-playbook", "-i", "inventory/example.yml", "--syntax-check", playbook], cwd=PLAYBOOKS,
                       capture_output=True, text=True, timeout=120, env={"ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"),
                                                                           "PATH": "/usr/bin:/bin:/usr/local/bin"})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_every_role_has_a_readme_naming_each_default_variable():
    for role in sorted((PLAYBOOKS / "roles").iterdir()):
        readme = (role / "README.md").read_text()
        defaults = role / "defaults" / "main.yml"
        for var in (yaml.safe_load(defaults.read_text()) or {}) if defaults.exists() else {}:
            assert f"`{var}`" in readme, f"{role.name}/README.md does not explain {var}"
