"""preflight: can this machine run the cells at all? Every finding at once, then exit 3.

Checked: Ray is installed; the miles checkout has the train script, the tools of the
conversions that will run and the functions of the test's own that are called; the GPUs — on this
node (nvidia-smi, amd-smi or rocm-smi, else torch) when run-matrix starts the head, or
the cluster's GPU resources with ``--ray-address``; the programs of the prepare steps
and services that will run. ``$RUN_MATRIX_GPUS`` (``amd:8``, ``nvidia:4``, ``none``) replaces the
detection, for machines whose GPUs the tools cannot see (and for tests).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.errors import EnvironmentProblem, counted
from runner.knowledge import checkout, own_checks
from runner.launch.planned import Planned
from runner.run import prepare, services
from runner.run.plan import Options
from schemas import calls
from schemas.calls import Hook
from schemas.prepare import Call, Conversion

GPU_OVERRIDE = "RUN_MATRIX_GPUS"
IN_PROCESS = ("write-file", "mkdir", "remove", "patch-hf-config")  # prepare steps run-matrix does itself
VENDOR_NAMES = {"nvidia": "NVIDIA", "amd": "AMD"}
_TOOLS = (  # (vendor, argv, a pattern whose distinct first groups are the GPUs)
    ("nvidia", ("nvidia-smi", "-L"), re.compile(r"^GPU (\d+):", re.MULTILINE)),
    ("amd", ("amd-smi", "list"), re.compile(r"^GPU: (\d+)", re.MULTILINE)),
    ("amd", ("rocm-smi", "--showid"), re.compile(r"^GPU\[(\d+)\]", re.MULTILINE)),
)


@dataclass(frozen=True)
class Gpus:
    counts: dict[str, int]  # vendor -> GPUs
    source: str

    def describe(self) -> str:
        found = [f"{n} {VENDOR_NAMES.get(v, v)}" for v, n in self.counts.items() if n]
        return f"{' and '.join(found) or 'no'} GPUs ({self.source})"


def need_checkout(options: Options) -> None:
    """Checked first: without a checkout, requirements on it would skip cells rather than say so."""
    if options.miles_root is None:
        _fail(["no miles checkout: pass --miles-root DIR or set MILES_ROOT"])


def check(planned: Sequence[Planned], options: Options) -> None:
    findings = []
    has_ray = importlib.util.find_spec("ray") is not None
    if not has_ray:
        findings.append("Ray is not installed: pip install 'run-matrix[run]'")
    for each in planned:
        findings += [f"{each.cell.id}: {f}" for f in _checkout(each, options.miles_root)]
        findings += [f"{each.cell.id}: {f}" for f in _own_checks(each, options)]
        findings += [f"{each.cell.id}: {f}" for f in _remote_services(each, options.ray_address)]
        findings += [f"{each.cell.id}: {f}" for f in _programs(each, options)]
    if options.ray_address is None:
        findings += _local_gpus(planned, options.caller_env)
    elif has_ray:
        findings += _cluster_gpus(planned, options.ray_address)
    if findings:
        _fail(findings)


def _fail(findings: list[str]) -> None:
    raise EnvironmentProblem(
        "preflight failed (--no-preflight runs anyway):\n" + "\n".join(f"  {f}" for f in findings)
    )


def _checkout(planned: Planned, miles_root: Path | None) -> list[str]:
    """The train script, and the tool of each conversion that will run (an older checkout may lack one)."""
    if miles_root is None:
        return []  # need_checkout says so
    needed: dict[str, str] = {planned.cell.spec.launch.script: ""}  # path -> why it is needed
    for name, step in planned.cell.spec.prepare.items():
        if isinstance(step, Conversion) and prepare.skip_reason(step) is None:
            needed.setdefault(f"tools/{step.tool}", f" (prepare step {name})")
    tree = checkout.Tree.at(miles_root)
    return [
        f"the miles checkout {miles_root} has no {path}{why}"
        for path, why in needed.items()
        if not tree.is_file(path)
    ]


def _own_checks(planned: Planned, options: Options) -> list[str]:
    """A test's own check, hook or prepare call must be in the checkout; a check that reads Ray's
    default session (``/tmp/ray/session_latest``) would read another Ray's logs, or none, on the head
    run starts for the cell (its session is in a private temp dir), so it needs a cluster started with
    the default."""
    if options.miles_root is None:
        return []  # need_checkout says so
    found = []
    for name, check in planned.cell.spec.verify.items():
        if not calls.is_own(check.call):
            continue
        own = own_checks.read(options.miles_root, check.call)
        if isinstance(own, str):
            found.append(f"verify.{name}: {own}")
        elif own.ray_paths and options.ray_address is None:
            found.append(
                f"verify.{name}: {calls.function_of(check.call)}() reads {', '.join(own.ray_paths)}, Ray's"
                " default session, and the Ray head run starts for a cell keeps its session in a private temp"
                " dir (run-matrix-ray-*): the check would read another Ray's logs, or none. Start a head with"
                " Ray's default temp dir (`ray start --head`) and run with --ray-address http://127.0.0.1:8265"
            )
    for index, entry in planned.cell.spec.launch.started():
        defined = own_checks.read(options.miles_root, entry.call) if isinstance(entry, Hook) else None
        if isinstance(defined, str):
            found.append(f"launch.before_submit.{index}: {defined}")
    for name, step in planned.cell.spec.prepare.items():
        if isinstance(step, Call) and not options.skip_prepare:
            defined = own_checks.read(options.miles_root, step.call)
            if isinstance(defined, str):
                found.append(f"prepare.{name}: {defined}")
    return found


def _remote_services(planned: Planned, address: str | None) -> list[str]:
    """A service is started on this machine: the job on another cluster would not reach it."""
    if address is None or services.local(address):
        return []
    return [
        f"{service.name} is started on this machine, and the job runs on the cluster at {address}:"
        f" start `{service.line}` on the cluster's head and run from there (--ray-address on 127.0.0.1)"
        for service in planned.services
    ]


def _programs(planned: Planned, options: Options) -> list[str]:
    path = options.caller_env.get("PATH")
    missing = [
        f"{service.name} needs {service.argv[0]}, which is not on PATH"
        for service in planned.services
        if not (service.listens and services.answers(service.listens))
        and shutil.which(service.argv[0], path=path) is None
    ]
    if options.skip_prepare:
        return missing
    for name, step in planned.cell.spec.prepare.items():
        program = planned.command("prepare", name).argv[0]
        if step.kind in IN_PROCESS or prepare.skip_reason(step) is not None:
            continue
        if shutil.which(program, path=path) is None:
            missing.append(f"prepare step {name} needs {program}, which is not on PATH")
    return missing


def _local_gpus(planned: Sequence[Planned], env: Mapping[str, str]) -> list[str]:
    gpus = local_gpus(env)
    findings = []
    for each in planned:
        cluster, profile = each.cell.spec.cluster, each.cell.profile
        if cluster.nodes > 1:
            findings.append(
                f"{each.cell.id}: needs {cluster.nodes} nodes; a local head is one: start a Ray cluster "
                "and pass --ray-address"
            )
        elif gpus.counts.get(profile.vendor, 0) < cluster.gpus_per_node:
            findings.append(
                f"{each.cell.id}: needs {cluster.gpus_per_node} {VENDOR_NAMES[profile.vendor]} GPUs "
                f"({profile.name}); this node has {gpus.describe()}"
            )
    return findings


def local_gpus(env: Mapping[str, str]) -> Gpus:
    override = env.get(GPU_OVERRIDE)
    if override is not None:
        return _override(override)
    counts: dict[str, int] = {}
    sources = []
    for vendor, argv, pattern in _TOOLS:
        if vendor in counts or shutil.which(argv[0], path=env.get("PATH")) is None:
            continue
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=dict(env))
        counts[vendor] = len(set(pattern.findall(done.stdout))) if done.returncode == 0 else 0
        sources.append(argv[0])
    if not sources:
        return _torch_gpus()
    return Gpus(counts, ", ".join(sources))


def _override(value: str) -> Gpus:
    vendor, _, count = value.partition(":")
    if value == "none":
        return Gpus({}, f"${GPU_OVERRIDE}")
    if vendor not in VENDOR_NAMES or not count.isdigit():
        raise EnvironmentProblem(
            f"${GPU_OVERRIDE}={value!r}: expected VENDOR:COUNT (amd:8, nvidia:4) or none"
        )
    return Gpus({vendor: int(count)}, f"${GPU_OVERRIDE}")


def _torch_gpus() -> Gpus:
    if importlib.util.find_spec("torch") is None:
        return Gpus({}, "no nvidia-smi, amd-smi, rocm-smi or torch")
    import torch

    vendor = "amd" if getattr(torch.version, "hip", None) else "nvidia"
    return Gpus({vendor: int(torch.cuda.device_count())}, "torch")


def _cluster_gpus(planned: Sequence[Planned], address: str) -> list[str]:
    from runner.run.cluster import client

    try:
        nodes = _alive_gpu_counts(client(address).get_address())
    except EnvironmentProblem as exc:
        return [str(exc)]
    findings = []
    for each in planned:
        cluster = each.cell.spec.cluster
        enough = [n for n in nodes if n >= cluster.gpus_per_node]
        if len(enough) < cluster.nodes:
            findings.append(
                f"{each.cell.id}: needs {counted(cluster.nodes, 'node')}"
                f" with {counted(cluster.gpus_per_node, 'GPU')}; "
                f"the cluster at {address} has GPUs per node: {sorted(nodes, reverse=True) or 'none'}"
            )
    return findings


def _alive_gpu_counts(api_address: str) -> list[int]:
    from ray.util.state import list_nodes

    try:
        nodes = list_nodes(address=api_address, filters=[("state", "=", "ALIVE")])
    except Exception as exc:  # the state API raises its own and requests' errors
        raise EnvironmentProblem(f"cannot list the nodes of the cluster at {api_address}: {exc}") from None
    return [int(node.resources_total.get("GPU", 0)) for node in nodes]
