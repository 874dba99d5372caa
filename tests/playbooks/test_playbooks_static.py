"""playbooks/ as a user with internet would run them, checked where they
cannot run here: ansible-lint's production profile, ansible-playbook's own
syntax check, and the k3s manifests rendered from their templates against
Kubernetes' schemas (k3s cannot be downloaded on this machine; the roles that
do run here are run for real in tests/hosts)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"
K3S_VERSION = "1.31"  # k3s_version's Kubernetes minor (roles/k3s_server/defaults)


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed; ./setup.sh installs Debian's ansible-core and ansible-lint")


def test_ansible_lint_production_profile_is_clean():
    _need("ansible-lint")
    p = subprocess.run(["ansible-lint", "--nocolor"], cwd=PLAYBOOKS, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "production" in (p.stdout + p.stderr)


@pytest.mark.parametrize("playbook", ["site.yml", "k3s.yml"])
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


def _manifests() -> list[dict]:
    role = PLAYBOOKS / "roles" / "k3s_workloads"
    variables = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(role / "templates"), undefined=jinja2.StrictUndefined)
    docs = []
    for name in ("namespace", "broker", "server", "endpoints"):
        text = env.get_template(f"{name}.yaml.j2").render(**variables)
        docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def test_k3s_manifests_match_the_kubernetes_schemas():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    docs = _manifests()
    assert [d["kind"] for d in docs] == ["Namespace", "ConfigMap", "Deployment", "Service", "Deployment", "Job"]
    for d in docs:
        kubernetes_validate.validate(d, K3S_VERSION, strict=True)
    # the check can fail: a misspelt field is refused
    bad = {**docs[2], "spec": {**docs[2]["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K3S_VERSION, strict=True)


def test_k3s_pods_land_on_the_nodes_of_their_role_and_run_the_workload():
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _manifests()}
    server = docs[("Deployment", "server")]["spec"]["template"]["spec"]
    job = docs[("Job", "endpoints")]["spec"]["template"]["spec"]
    assert server["nodeSelector"] == {"continuum.io/role": "edge"}
    assert job["nodeSelector"] == {"continuum.io/role": "endpoint"}
    assert "-m workloads endpoint image_classification" in " ".join(job["containers"][0]["command"])
    env = {e["name"]: e["value"] for e in job["containers"][0]["env"]}
    assert env["CONTINUUM_BROKER"] == "broker:1883" and env["CONTINUUM_RATE"] == "2.0"
