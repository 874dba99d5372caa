"""engine = "k3s": the pods continuum starts, checked where k3s cannot run.

k3s cannot be downloaded on this machine, so no pod runs under a live
cluster here. What is checked instead, for real: the Pod objects continuum
makes from a real plan (the quickstart on three machines) against
Kubernetes 1.31's schemas, and their container run by Docker (the same OCI
runtime, runc) with exactly the pod's rights, mounts and environment, in a
network namespace made by the test: it must enter that namespace, drop to
the workload user with no capability left, and write its records where the
run folder is mounted. The refusal when the machines have no k3s is in
tests/hosts."""

from __future__ import annotations

import dataclasses
import json
import secrets
import subprocess
from pathlib import Path

import pytest

from continuum import naming
from continuum.engines import containers, k3s
from continuum import experiment
from continuum.network import plan as netplan
from continuum.remote import SshHost
from continuum.runtime import Node
from continuum.workloads import launch

REPO = Path(__file__).resolve().parents[2]
K8S_VERSION = "1.31"  # k3s_version's Kubernetes minor (playbooks/roles/k3s_server/defaults)
RUN_ID = "0a1b2c3d"
PROVIDER = '''[provider]
kind = "hosts"
engine = "k3s"
k3s_server = "gw"
[provider.hosts.ue]
address = "192.0.2.11"
role = "endpoint"
[provider.hosts.gw]
address = "192.0.2.10"
role = "link"
[provider.hosts.mec]
address = "192.0.2.12"
role = "edge"
'''


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """The quickstart as pods on three machines: its spec, plan and run folder."""
    if containers.engine_problem() or containers.image_problems(["continuum/w1-endpoint", "continuum/w1-server"]):
        pytest.skip("the pods' images are read from Docker: ./run-tests.sh starts it and builds them")
    d = tmp_path_factory.mktemp("k3s")
    text = ((REPO / "configs" / "quickstart.toml").read_text().replace('[provider]\nkind = "netns"\n', PROVIDER)
            .replace("[workload]\napp = ", '[workload]\nruntime = "container"\napp = '))
    (d / "exp.toml").write_text(text)
    spec = experiment.load(d / "exp.toml", materialize=False)
    return spec, netplan.build(spec), d / "run"


def _pod(quickstart, side: str) -> k3s.PodSpec:
    spec, plan, run_dir = quickstart
    cluster = k3s.Cluster(SshHost("gw", "192.0.2.10"), RUN_ID, {"ue": "ue-node", "mec": "mec-node"})
    name = "endpoint0" if side == "endpoint" else plan.offload_target
    machine = plan.placement[name]
    node = Node(name, naming.netns(RUN_ID, name), plan.addresses[name],
                host=SshHost(machine, {"ue": "192.0.2.11", "mec": "192.0.2.12"}[machine]), cluster=cluster)
    raw = run_dir / "raw"
    env = (launch.endpoint_env(spec, node, plan.addresses[plan.offload_target], raw, 1) if side == "endpoint"
           else launch.server_env(spec, spec.apps[0], node, raw, 1))
    image = spec.workload.endpoint.image if side == "endpoint" else spec.workload.server.image
    assert image is not None
    return launch.pod_spec(spec, spec.apps[0], side, image, [], node, env, run_dir, 1, models_there=True)


def test_the_pods_match_the_kubernetes_schemas(quickstart):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    docs = [k3s.namespace_manifest(RUN_ID), k3s.manifest(_pod(quickstart, "endpoint")), k3s.manifest(_pod(quickstart, "server"))]
    for d in docs:
        kubernetes_validate.validate(d, K8S_VERSION, strict=True)
    bad = json.loads(json.dumps(docs[1]))  # the check can fail: a misspelt field is refused
    bad["spec"]["containers"][0]["securityContext"]["capability"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_each_pod_goes_to_its_nodes_machine_with_its_limits_inside_its_namespace(quickstart):
    spec, plan, run_dir = quickstart
    for side, node, machine in (("endpoint", "endpoint0", "ue-node"), ("server", "edge0", "mec-node")):
        m = k3s.manifest(_pod(quickstart, side))
        limits = next(n for n in spec.nodes if n.name == node)
        assert m["metadata"]["namespace"] == f"continuum-{RUN_ID}"
        assert m["metadata"]["labels"][k3s.LABEL_RUN] == RUN_ID
        assert m["spec"]["nodeSelector"] == {"kubernetes.io/hostname": machine}
        c = m["spec"]["containers"][0]
        assert c["resources"]["limits"] == c["resources"]["requests"] == {"cpu": f"{limits.cpus:g}", "memory": str(limits.memory_bytes)}
        assert c["imagePullPolicy"] == "Never" and c["image"].endswith(":local")
        assert c["command"][:2] == ["nsenter", f"--net=/run/netns/{naming.netns(RUN_ID, node)}"]
        assert c["command"][-5:] == ["python3", "-m", "workloads", side, "image_classification"]  # the image's own CMD
        env = {e["name"]: e["value"] for e in c["env"]}
        if side == "endpoint":  # the broker at the offload node's address in the plan: across the emulated link
            assert env["CONTINUUM_BROKER"] == f"{plan.addresses['edge0']}:{netplan.MQTT_PORT}"
        mounts = {v["mountPath"]: v["readOnly"] for v in c["volumeMounts"]}
        assert mounts[str(run_dir / "raw")] is False and mounts[str(launch.model_cache())] is True


def _docker_run(m: dict, name: str) -> list[str]:
    """The pod's container as Docker runs it: its image, command, environment,
    capabilities, user, limits and host folders (with their propagation)."""
    c = m["spec"]["containers"][0]
    paths = {v["name"]: v["hostPath"]["path"] for v in m["spec"]["volumes"]}
    argv = ["docker", "run", "--rm", "--name", name, "--label", "continuum.test=1",
            "--user", str(c["securityContext"]["runAsUser"]),
            "--cpus", c["resources"]["limits"]["cpu"], "--memory", c["resources"]["limits"]["memory"]]
    argv += [a for cap in c["securityContext"]["capabilities"]["add"] for a in ("--cap-add", cap)]
    for v in c["volumeMounts"]:
        opts = ("ro" if v["readOnly"] else "rw") + (",rslave" if v.get("mountPropagation") == "HostToContainer" else "")
        argv += ["-v", f"{paths[v['name']]}:{v['mountPath']}:{opts}"]
    argv += [a for e in c["env"] for a in ("-e", f"{e['name']}={e['value']}")]
    return [*argv, "--entrypoint", c["command"][0], c["image"], *c["command"][1:]]


PROBE = r"""
import json, os
caps = {l.split(':')[0]: l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')}
devs = [l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]]
out = os.path.join(os.environ['PROBE_RAW'], 'requests-endpoint0.csv')
open(out, 'w').write('request\n')
try:
    open(os.path.join(os.environ['PROBE_MODELS'], 'x'), 'w')
    models = 'writable'
except OSError:
    models = 'read-only'
print(json.dumps({'uid': os.getuid(), 'gid': os.getgid(), 'groups': os.getgroups(), 'caps': caps, 'devs': devs, 'models': models}))
"""


@pytest.mark.parametrize("as_root", [False, True], ids=["workload-user", "run_as_root"])
def test_the_pods_container_enters_its_node_and_keeps_no_privilege(quickstart, root_netns, tmp_path, as_root):
    pod = _pod(quickstart, "endpoint")
    ns = f"ctm-test-k3s-{secrets.token_hex(3)}"
    raw, models = tmp_path / "raw", tmp_path / "models"
    raw.mkdir()
    models.mkdir()
    if not as_root:  # as the hosts provider leaves the run folder's raw/ on a machine
        subprocess.run(["chown", "nobody:", str(raw)], check=True)
    pod = dataclasses.replace(pod, netns=ns, mounts=((str(raw), True), (str(models), False)), as_root=as_root,
                              command=("python3", "-c", PROBE), env={"PROBE_RAW": str(raw), "PROBE_MODELS": str(models)})
    subprocess.run(["ip", "netns", "add", ns], check=True)
    name = f"{ns}-pod"
    try:
        subprocess.run(["ip", "-n", ns, "link", "add", "pod-probe0", "type", "veth", "peer", "name", "pod-probe1"], check=True)
        p = subprocess.run(_docker_run(k3s.manifest(pod), name), capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    assert p.returncode == 0, p.stderr[-2000:]
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert "pod-probe0" in seen["devs"], seen["devs"]  # inside the node's namespace, not the container's own
    assert seen["models"] == "read-only"
    written = raw / "requests-endpoint0.csv"
    assert written.read_text() == "request\n"
    if as_root:
        assert seen["uid"] == 0
        assert int(seen["caps"]["CapEff"], 16) & (1 << 21) == 0  # CAP_SYS_ADMIN, taken only to enter the node, is gone
        assert int(seen["caps"]["CapBnd"], 16) & (1 << 21) == 0
    else:
        assert (seen["uid"], seen["gid"], seen["groups"]) == (k3s.NOBODY, k3s.NOBODY, [])
        assert all(int(v, 16) == 0 for v in seen["caps"].values()), seen["caps"]
        assert written.stat().st_uid == k3s.NOBODY


def test_pod_names_are_dns_labels():
    assert k3s.pod_name("edge0", "server", "AR_app", "r12") == "edge0-server-ar-app-r12"
    assert k3s.pod_name("endpoint0", "endpoint", "", "r1") == "endpoint0-endpoint-r1"
    long = k3s.pod_name("x" * 80, "server")
    assert len(long) <= 63 and not long.endswith("-")


@pytest.mark.parametrize("status, expected", [
    ({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
      "containerStatuses": [{"state": {"waiting": {"reason": "ContainerCreating"}}}]}, None),
    ({"phase": "Running", "containerStatuses": [{"state": {"running": {"startedAt": "2026-11-23T19:00:00Z"}}}]}, None),
    ({"phase": "Succeeded", "containerStatuses": [{"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]},
     (0, "Completed with status 0")),
    ({"phase": "Failed", "containerStatuses": [{"state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]},
     (2, "Error with status 2")),
    ({"phase": "Pending", "containerStatuses": [{"state": {"waiting": {
        "reason": "ErrImageNeverPull", "message": 'Container image "continuum/w1-server:local" is not present with pull policy of Never'}}}]},
     (125, "its container cannot start: ErrImageNeverPull: Container image \"continuum/w1-server:local\" is not present with pull policy of Never")),
    ({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                          "message": "0/3 nodes are available: 1 Insufficient cpu."}]},
     (125, "k3s cannot place it on mec-node: 0/3 nodes are available: 1 Insufficient cpu.")),
])
def test_a_pods_status_says_when_it_has_ended_and_why(status, expected):
    """Kubernetes' PodStatus objects as the API returns them: a pod that
    cannot start or be placed has ended (the run stops, naming why); one
    that is starting or running has not."""
    assert k3s.outcome(status, "mec-node") == expected
