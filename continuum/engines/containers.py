"""Workloads in Docker containers, attached to the node's namespace and
limited by the node's cgroup.

A node that runs containers is created from a sandbox container (`sleep`
with no network of its own, like a Kubernetes pause container) whose network
namespace is given the node's name with `ip netns attach`; the provider then
wires it like any other node, and workload containers join it with
`--network container:SANDBOX`. With Docker's cgroupfs driver, containers are
started under the node's own cgroup (`--cgroup-parent`), so the node's CPU
quota and memory limit cover them exactly as they cover processes.

No image registry is reachable here, so every image is built locally: a
Debian base made by mmdebstrap and `docker import`, then one Dockerfile per
workload side, with Python wheels from a local wheelhouse."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from continuum import REPO, commands
from continuum.errors import CommandError, ProviderError
from continuum.workloads import debian_packages as app_packages
from continuum.workloads import images as app_images

WORKLOADS = REPO / "workloads"
WHEELHOUSE = REPO / ".cache" / "wheelhouse"
LABEL_RUN = "continuum.run"
LABEL_SOURCE = "continuum.source"
TAG = "local"
SUITE, MIRROR = "bookworm", "http://deb.debian.org/debian"
BASE_PACKAGES = ["python3", "python3-paho-mqtt", "python3-numpy", "python3-pil", "python3-pip", "python3-setuptools",
                 "python3-protobuf", "python3-requests", "python3-six", "python3-packaging", "python3-astunparse",
                 "python3-oauthlib", "python3-markupsafe", "python3-yaml", "ca-certificates"]


def _role_packages() -> list[str]:
    """The Debian packages playbooks/site.yml's roles install on a machine
    (base, mosquitto, workload, link_host): the host image has them, so that
    provisioning it works offline and a second run changes nothing."""
    import yaml

    roles = REPO / "playbooks" / "roles"
    out: list[str] = []
    for role, key in (("base", "base_packages"), ("workload", "workload_debian_packages")):
        out += yaml.safe_load((roles / role / "defaults" / "main.yml").read_text())[key]
    # python3-apt: Ansible's apt module needs it on the machine (and would fetch it from a mirror)
    return sorted(set(out) | {"mosquitto", "iproute2", "ethtool", "openssh-server", "rsync", "python3-venv", "python3-apt"})


# The base also carries what the playbooks' roles install, so that continuum/host
# (a machine for the hosts provider on one computer) is a layer on W1's server.
BASES = {"continuum/base": sorted(set(BASE_PACKAGES + _role_packages())),
         "continuum/base-torch": sorted(set(BASE_PACKAGES + _role_packages())) + ["python3-torch"]}
# image -> (Dockerfile relative to the checkout, requirements it installs from the wheelhouse)
IMAGES = {
    **app_images(),  # the built-in apps' (continuum/workloads: each app names its images)
    "continuum/example": ("workloads/example/Dockerfile", None),
    # A machine for the hosts provider on one computer (tests, trying it out): sshd and the roles' packages.
    "continuum/host": ("playbooks/host/Dockerfile", None),
}
def docker_packages() -> list[str]:
    """Docker's Debian packages on a machine that runs containers (playbooks/roles/workload_images
    installs them; the qemu provider's guest image variant has them)."""
    import yaml

    return list(yaml.safe_load((REPO / "playbooks" / "roles" / "workload_images" / "defaults" / "main.yml").read_text())
                ["workload_images_docker_packages"])


# Build arguments: continuum/host carries every app's own Debian packages (a machine may serve any app,
# and the test machines reach no mirror: the workload role then finds them installed)
# and Docker's (container workloads on the machines: playbooks/roles/workload_images, which starts it there)
BUILD_ARGS = {"continuum/host": {"APP_PACKAGES": " ".join([*app_packages(), *docker_packages()])}}


def ref(image: str) -> str:
    """An image name as the user gives it; continuum's own images get the local tag."""
    return f"{image}:{TAG}" if (image in IMAGES or image in BASES) and ":" not in image else image


def source_hash() -> str:
    """What continuum's images are built from: the workloads/ sources and the base package list."""
    h = hashlib.sha256(json.dumps([BASES, BUILD_ARGS], sort_keys=True).encode())
    for p in sorted(WORKLOADS.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(WORKLOADS)).encode() + p.read_bytes())
    for dockerfile, _ in IMAGES.values():
        if not dockerfile.startswith("workloads/"):
            for p in sorted((REPO / dockerfile).parent.rglob("*")):
                if p.is_file():
                    h.update(str(p.relative_to(REPO)).encode() + p.read_bytes())
    return h.hexdigest()[:16]


def _docker(args: list[str], check: bool = True, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return commands.run(["docker", *args], check=check, timeout=timeout)


def engine_problem() -> str | None:
    """Why containers cannot run here (None: the Docker engine answers)."""
    if not shutil.which("docker"):
        return "docker not found: run ./setup.sh --containers (installs Debian's docker.io and starts the engine)"
    p = _docker(["info", "--format", "{{.CgroupDriver}}"], check=False, timeout=30)
    if p.returncode != 0:
        return ("the Docker engine is not running (" + (p.stderr.strip().splitlines() or ["no answer"])[-1] +
                "): run ./setup.sh --containers, which starts dockerd")
    return None


def cgroup_driver(run: Callable[..., subprocess.CompletedProcess] | None = None) -> str:
    """Docker's cgroup driver here, or where `run` runs commands (a node's machine)."""
    argv = ["docker", "info", "--format", "{{.CgroupDriver}}"]
    return (run(argv, timeout=30) if run is not None else commands.run(argv, timeout=30)).stdout.strip()


def image_problems(images: list[str]) -> list[str]:
    """Images that are missing, or continuum images built from other workloads/ sources."""
    problems, current = [], source_hash()
    for image in images:
        p = _docker(["image", "inspect", "--format", "{{json .Config.Labels}}", ref(image)], check=False)
        if p.returncode != 0:
            how = "continuum images build" if image in IMAGES or image in BASES else "docker build/load it"
            problems.append(f"image {ref(image)} not found: {how}")
        elif image in IMAGES and (json.loads(p.stdout) or {}).get(LABEL_SOURCE) != current:
            problems.append(f"image {ref(image)} was built from other workloads/ sources: continuum images build")
    return problems


def build(say: Callable[[str], None], only: list[str] | None = None) -> list[str]:
    """Build the bases (if missing) and continuum's workload images; returns the image refs."""
    problem = engine_problem()
    if problem:
        raise ProviderError(problem)
    wanted = only or list(IMAGES)
    unknown = [i for i in wanted if i not in IMAGES]
    if unknown:
        raise ProviderError(f"unknown image(s) {', '.join(unknown)}; valid: {', '.join(IMAGES)}")
    bases = {line.split()[1].split(":")[0] for i in wanted
             for line in (REPO / IMAGES[i][0]).read_text().splitlines() if line.startswith("FROM ")}
    for base, packages in BASES.items():
        if base not in bases and base != "continuum/base":  # continuum/base: the sandbox containers' image
            continue
        tag = f"{base}:{SUITE}-{hashlib.sha256(' '.join(packages).encode()).hexdigest()[:8]}"
        if _docker(["image", "inspect", tag], check=False).returncode != 0:
            if not shutil.which("mmdebstrap"):
                raise ProviderError("mmdebstrap not found: run ./setup.sh --containers")
            say(f"building {tag} with mmdebstrap ({len(packages)} Debian packages; a minute or two)")
            with tempfile.TemporaryDirectory() as d:
                tar = Path(d) / "rootfs.tar"
                commands.run(["mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(packages)}",
                              SUITE, str(tar), MIRROR], timeout=1800)
                _docker(["import", str(tar), tag], timeout=600)
        _docker(["tag", tag, f"{base}:{TAG}"])
    source = source_hash()
    for req in {r for i in wanted if (r := IMAGES[i][1]) and image_problems([i])}:
        say(f"wheelhouse: {req}")
        download_wheels(WORKLOADS / req)
    built = []
    for image in wanted:
        dockerfile, image_req = IMAGES[image]
        if not image_problems([image]):
            say(f"{ref(image)} is up to date")
            built.append(ref(image))
            continue
        say(f"building {ref(image)} ({dockerfile})")
        with tempfile.TemporaryDirectory() as d:
            ctx = Path(d)
            shutil.copytree(WORKLOADS, ctx / "workloads", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            if not dockerfile.startswith("workloads/"):  # its folder is its context (continuum/host: playbooks/host)
                shutil.copytree(REPO / Path(dockerfile).parent, ctx / Path(dockerfile).parent)
            (ctx / "wheels").mkdir()
            if image_req:
                for whl in wheels(WORKLOADS / image_req):
                    shutil.copy(whl, ctx / "wheels")
            args = [a for k, v in BUILD_ARGS.get(image, {}).items() for a in ("--build-arg", f"{k}={v}")]
            p = commands.run(["docker", "build", "--quiet", "--label", f"{LABEL_SOURCE}={source}", *args, "-t", ref(image),
                              "-f", str(REPO / dockerfile), str(ctx)], check=False, timeout=1800)
            if p.returncode != 0:
                raise ProviderError(f"docker build of {image} failed:\n{p.stderr[-3000:]}")
        built.append(ref(image))
    return built


def _requirement_names(req: Path) -> list[str]:
    names = [line.split("#")[0].strip().split("==")[0].lower().replace("-", "_") for line in req.read_text().splitlines()]
    return [n for n in names if n]


def wheels(req: Path) -> list[Path]:
    """The wheelhouse's wheels of a requirement file's packages."""
    return [whl for name in _requirement_names(req) for whl in WHEELHOUSE.glob("*.whl")
            if whl.name.lower().startswith(name + "-")]


def wheels_missing(req: Path) -> list[str]:
    """Packages of a requirement file the wheelhouse has no wheel of."""
    have = {whl.name.lower() for whl in WHEELHOUSE.glob("*.whl")}
    return [n for n in _requirement_names(req) if not any(h.startswith(n + "-") for h in have)]


def download_wheels(req: Path) -> None:
    """Fill the wheelhouse from PyPI (pinned versions, no dependencies beyond the file's)."""
    commands.run([str(REPO / ".venv" / "bin" / "pip"), "download", "--quiet", "--disable-pip-version-check",
                  "--no-deps", "-r", str(req), "-d", str(WHEELHOUSE)], timeout=1800)


def sandbox_argv(name: str, run_id: str) -> list[str]:
    """`docker run` of a node's sandbox container: no network of its own, its namespace becomes the node's."""
    return ["docker", "run", "-d", "--name", name, "--label", f"{LABEL_RUN}={run_id}", "--network", "none",
            "--init", ref("continuum/base"), "sleep", "infinity"]


def sandbox(name: str, run_id: str) -> int:
    """Start a node's sandbox container here; returns its PID for `ip netns attach`."""
    try:
        _docker(sandbox_argv(name, run_id)[1:])
        return int(_docker(["inspect", "--format", "{{.State.Pid}}", name]).stdout.strip())
    except CommandError as e:
        raise ProviderError(f"cannot start the sandbox container {name}: {e.stderr or e}") from None


def sandbox_name(run_id: str, node: str) -> str:
    return f"ctm-{run_id}-{node}-sandbox"


def container_nodes(spec, offload_target: str) -> list[str]:
    """Nodes of an ExperimentSpec whose namespace must come from a sandbox container."""
    w = spec.workload
    nodes = [n.name for n in spec.role("endpoint")] if w.endpoint.runtime == "container" else []
    return nodes + ([offload_target] if w.server.runtime == "container" else [])


def spec_images(spec) -> list[str]:
    """The container images an ExperimentSpec's workload sides run (every app's)."""
    return sorted({s.image for a in spec.apps for s in (a.workload.endpoint, a.workload.server)
                   if s.runtime == "container" and s.image})


def remove(name: str) -> None:
    _docker(["rm", "-f", name], check=False, timeout=60)


def run_argv(name: str, run_id: str, image: str, command: list[str], network: str, cgroup_parent: str | None,
             cpus: float, memory_bytes: int, env: dict[str, str], mounts: list[tuple[Path, bool]],
             period_us: int = 100_000) -> list[str]:
    """`docker run` for one workload side inside its node (foreground: SIGTERM reaches the app).
    `network`: Docker's --network (the node's sandbox, `container:NAME`, or `host` on a VM that is
    the node); `cgroup_parent`: the node's cgroup under Docker's cgroupfs driver, else None and the
    container gets the node's limits itself (systemd driver: parents must be slices)."""
    argv = ["docker", "run", "--rm", "--name", name, "--label", f"{LABEL_RUN}={run_id}", "--init", "--network", network]
    if cgroup_parent is not None:
        argv += ["--cgroup-parent", "/" + cgroup_parent]
    else:
        argv += ["--cpu-period", str(period_us), "--cpu-quota", str(max(1000, round(cpus * period_us))),
                 "--memory", str(memory_bytes), "--memory-swap", str(memory_bytes)]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    for path, writable in mounts:
        if ":" in str(path) or "\n" in str(path):
            raise ProviderError(f"{path}: a ':' or a line break in a folder to mount into a container would change what "
                                "`docker run -v` mounts; choose an output folder without them")
        argv += ["-v", f"{path}:{path}:{'rw' if writable else 'ro'}"]
    return argv + [ref(image), *command]


def leftovers(run_id: str | None) -> list[str]:
    """Names of containers continuum started (for one run, or any) that still exist."""
    if not shutil.which("docker"):
        return []
    flt = f"label={LABEL_RUN}" + (f"={run_id}" if run_id else "")
    p = _docker(["ps", "-a", "--filter", flt, "--format", "{{.Names}}"], check=False, timeout=30)
    return p.stdout.split() if p.returncode == 0 else []


def image_command(image: str, command: list[str]) -> list[str]:
    """What a container of the image runs (its entrypoint, then `command` or
    its own CMD, as `docker run IMAGE COMMAND` would): for an engine that is
    given the whole command line (k3s, after its entry into the node)."""
    p = _docker(["image", "inspect", "--format", "{{json .Config.Entrypoint}} {{json .Config.Cmd}}", ref(image)], check=False)
    if p.returncode != 0:
        raise ProviderError(f"image {ref(image)} is not here: `continuum images build` builds continuum's own ({p.stderr.strip()})")
    entrypoint, cmd = (json.loads(x) or [] for x in p.stdout.split(" ", 1))
    return [*entrypoint, *(command or cmd)]


def image_id(image: str) -> str:
    """The image's content id, for the manifest."""
    p = _docker(["image", "inspect", "--format", "{{.Id}}", ref(image)], check=False)
    return p.stdout.strip() or "unknown"
