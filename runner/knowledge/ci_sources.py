"""ci_sources: what each platform's CI sets for a test's process, and where each suite runs, read
from a miles checkout's own files as data (nothing of them is run).

* **A platform's environment** — the ``env:`` of the job in the reusable workflow that runs a suite
  of that platform (``.github/workflows/_run-ci-rocm.yml``: ``MILES_HARDWARE_PLATFORM: rocm``), and
  the ``ENV`` lines of the platform's image (``docker/Dockerfile.rocm``; the image is chosen by the
  file's name, which the workflow does not say: it pulls a prebuilt tag). A GitHub expression is
  mapped where run-matrix has the value (``${{ github.workspace }}`` -> ``${MILES_ROOT}``); any other
  (a secret, the event's sha) is listed as set but unknown, with the reason, never guessed.
* **Suites** — each job of a workflow that calls a reusable CI workflow with ``runs_on`` labels and
  ``run_suite.py --hw HW --suite NAME``: the platform, the runner labels, the GPU model and count the
  labels name. Suites that ``tests/ci/run_suite.py`` lists but no workflow of the checkout runs (the
  MI350 nightly suites) get their hardware from the suite's name, and say so.

Hostile input: every file is read bounded, a workflow or Dockerfile that does not parse is a
problem at its ``file:line`` and the others are still read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from runner.errors import Problem
from runner.knowledge import ci_images
from runner.knowledge.ci_images import Setting, at
from runner.memos import remember
from runner.spec import documents, yaml_documents

Read = Callable[[str], "str | Unread | None"]  # a checkout-relative path -> its text (None: no such file)
PLATFORMS = ("cuda", "rocm")
IMAGES = {"cuda": "docker/Dockerfile", "rocm": "docker/Dockerfile.rocm"}
RUN_SUITE = "tests/ci/run_suite.py"
MAX_NODES = 20_000  # a workflow is a few hundred nodes; aliases could make a walk explode
MAX_WORKFLOW_BYTES = 1 << 20  # a workflow is a few kB
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
KNOWN_EXPRESSIONS = {"github.workspace": "${MILES_ROOT}"}
SUITE = re.compile(r"--suite\s+([A-Za-z0-9_.-]+)")
SUITE_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # a suite's name, as --suite above reads one
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")  # a runner label: self-hosted, linux-mi350-gpu-4
HW = re.compile(r"--hw\s+([a-z]+)")
SUITE_NAME = re.compile(r"-(\d+)-gpu(?:-([a-z]+\d+[a-z0-9]*))?$")  # stage-c-4-gpu-mi350: 4 GPUs of an mi350
GPU_LABEL = re.compile(r"^(\d+)gpu$")
GPU_MODEL = re.compile(r"^(?:[a-z]+\d+[a-z0-9]*)$")
NO_MODEL = "the workflow's runner labels name no GPU model"
NOT_MODELS = {"self-hosted", "amd", "nvidia", "linux", "x64", "arm64"}


@dataclass(frozen=True)
class Unread:
    """A file of the checkout that is there but was not read, and why (over the budget of a CI file)."""

    why: str


@dataclass(frozen=True)
class Suite:
    platform: str
    hardware: str | None  # the GPU model the runner labels (or the suite's name) give: mi350, h200
    gpus: int | None
    source: str
    runs_on: tuple[str, ...] = ()
    note: str = ""  # where the facts come from, when not from a workflow's labels


@dataclass(frozen=True)
class Platform:
    workflow: str = ""
    image: str = ""
    env: dict[str, Setting] = field(default_factory=dict)


@dataclass(frozen=True)
class CISources:
    platforms: dict[str, Platform] = field(default_factory=dict)
    suites: dict[str, Suite] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def read(files: list[str], read_text: Read) -> CISources:
    """The CI knowledge of a checkout whose workflow files are ``files`` (checkout-relative)."""
    found = CISources()
    callers = []
    for path in sorted(
        f for f in files if f.startswith(".github/workflows/") and f.endswith((".yml", ".yaml"))
    ):
        node = _parsed(path, read_text(path), found.problems)
        if node is not None:
            callers += list(_suite_jobs(path, node, found.problems))
    for suite_name, platform, labels, gpus, workflow, source in callers:
        found.suites.setdefault(suite_name, Suite(platform, _from_labels(labels)[0], gpus, source, labels))
        entry = found.platforms.setdefault(platform, Platform())
        if not entry.workflow:
            found.platforms[platform] = replace(entry, workflow=workflow)
    for platform, entry in list(found.platforms.items()):
        node = _parsed(entry.workflow, read_text(entry.workflow), found.problems)
        env = _job_env(entry.workflow, node, found.problems) if node is not None else {}
        found.platforms[platform] = replace(entry, env=env)
    for platform in PLATFORMS:
        image = IMAGES[platform]
        text = _text(image, read_text, found.problems)
        if text is not None:
            entry = found.platforms.setdefault(platform, Platform())
            env = {**ci_images.dockerfile_env(image, text, found.problems), **entry.env}
            found.platforms[platform] = replace(entry, image=image, env=env)
    _listed_suites(_text(RUN_SUITE, read_text, found.problems), found)
    found.problems[:] = dict.fromkeys(found.problems)  # a workflow both listed and called: said once
    return found


def _text(path: str, read_text: Read, problems: list[Problem]) -> str | None:
    """The file's text; None where there is none, with a problem where it is there but was not read."""
    return _readable(path, read_text(path), problems)


def _readable(path: str, text: str | Unread | None, problems: list[Problem]) -> str | None:
    if isinstance(text, Unread):
        problems.append(Problem("ci-sources", f"{path}: {text.why}", locations=at(path)))
        return None
    return text


@remember("pure", "a workflow's YAML nodes, by its text (a node is only read)", maxsize=64)
def _composed(text: str) -> yaml.Node | None:
    """A workflow's YAML nodes, once per text in a process (a suite import reads the same workflows
    for every test; a node is only read)."""
    return yaml_documents.node(text, MAX_WORKFLOW_BYTES, values=None)  # walks stop at MAX_NODES


def _parsed(path: str, read: str | Unread | None, problems: list[Problem]) -> yaml.Node | None:
    if read is None:
        problems.append(Problem("ci-sources", f"{path}: no such file in the checkout", locations=at(path)))
        return None
    text = _readable(path, read, problems)
    if text is None:
        return None
    try:
        node = _composed(text)
    except documents.Unreadable as error:
        reason = f"{path} does not parse as YAML: {error.reason}"
        problems.append(Problem("ci-sources", reason, locations=at(path, error.line)))
        return None
    return node if isinstance(node, yaml.MappingNode) else None


def _items(node: yaml.Node | None) -> Iterator[tuple[str, yaml.Node]]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value[:MAX_NODES]:
            if isinstance(key, yaml.ScalarNode):
                yield str(key.value), value


def _get(node: yaml.Node | None, *names: str) -> yaml.Node | None:
    for name in names:
        node = next((value for key, value in _items(node) if key == name), None)
    return node


def _scalar(node: yaml.Node | None) -> str | None:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None


def _line(path: str, node: yaml.Node) -> str:
    return f"{path}:{node.start_mark.line + 1}"


def _suite_jobs(
    path: str, root: yaml.Node, problems: list[Problem]
) -> Iterator[tuple[str, str, tuple[str, ...], int | None, str, str]]:
    """(suite, platform, runner labels, GPUs, reusable workflow, file:line) of each job that runs
    ``run_suite.py --hw HW --suite NAME`` through a reusable CI workflow (``NAME`` may be the job's
    ``${{ matrix.suite }}``: each value of it)."""
    for _, job in _items(_get(root, "jobs")):
        uses = _scalar(_get(job, "uses")) or ""
        given = _get(job, "with")
        command = _scalar(_get(given, "execute_command")) or ""
        hw = HW.search(command)
        if not uses.startswith("./.github/workflows/") or hw is None or hw[1] not in PLATFORMS:
            continue
        labels_node = _get(given, "runs_on")
        labels = _labels(path, labels_node, problems) if labels_node is not None else ()
        if labels is None:
            continue
        count = _scalar(_get(given, "gpu_count"))
        gpus = int(count) if count is not None and count.isdigit() else _from_labels(labels)[1]
        where = _line(path, labels_node if labels_node is not None else given or job)
        for name in _named(_suite_names(command, job), SUITE_WORD, "a suite's name", path, job, problems):
            yield name, hw[1], labels, gpus, uses.removeprefix("./"), where


def _named(
    words: list[str], grammar: re.Pattern[str], what: str, path: str, node: yaml.Node, problems: list[Problem]
) -> list[str]:
    """The words that are what they name; each other one said (escaped) where it was read, and skipped."""
    for word in words:
        if not grammar.fullmatch(word):
            line = node.start_mark.line + 1
            problems.append(
                Problem("ci-sources", f"{word!r} is not {what}: skipped", locations=at(path, line))
            )
    return [word for word in words if grammar.fullmatch(word)]


def _suite_names(command: str, job: yaml.Node) -> list[str]:
    if "${{ matrix.suite }}" in command:
        values = _get(job, "strategy", "matrix", "suite")
        return (
            [str(v.value) for v in values.value if isinstance(v, yaml.ScalarNode)]
            if isinstance(values, yaml.SequenceNode)
            else []
        )
    found = SUITE.search(command)
    return [found[1]] if found and "${{" not in found[1] else []


def _labels(path: str, node: yaml.Node, problems: list[Problem]) -> tuple[str, ...] | None:
    """``'["self-hosted", "amd", "mi350", "4gpu"]'`` (JSON text for fromJSON) or a YAML list."""
    if isinstance(node, yaml.SequenceNode):
        given = [str(item.value) for item in node.value if isinstance(item, yaml.ScalarNode)]
        return tuple(_named(given, LABEL, "a runner label", path, node, problems))
    text = _scalar(node) or ""
    try:
        labels = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        labels = None
    if isinstance(labels, list) and all(isinstance(label, str) for label in labels):
        return tuple(_named(labels, LABEL, "a runner label", path, node, problems))
    problems.append(
        Problem(
            "ci-sources",
            f"runs_on {text[:80]!r} is not a list of runner labels",
            locations=at(path, node.start_mark.line + 1),
        )
    )
    return None


def _from_labels(labels: tuple[str, ...]) -> tuple[str | None, int | None]:
    gpus = next((int(m[1]) for label in labels if (m := GPU_LABEL.match(label))), None)
    models = [
        label
        for label in labels
        if GPU_MODEL.match(label) and label not in NOT_MODELS and not GPU_LABEL.match(label)
    ]
    return (models[0] if models else None), gpus


def _job_env(path: str, root: yaml.Node, problems: list[Problem]) -> dict[str, Setting]:
    """The ``env:`` of the workflow's jobs (the first that has one), each value or why it is unknown."""
    found: dict[str, Setting] = {}
    for _, job in _items(_get(root, "jobs")):
        for name, value in _items(_get(job, "env")):
            found.setdefault(name, _setting(path, value))
        if found:
            break
    return found


def _setting(path: str, node: yaml.Node) -> Setting:
    text = _scalar(node)
    source = _line(path, node)
    if text is None:
        return Setting(None, source, "not a single value")
    unknown = [e for e in EXPRESSION.findall(text) if e not in KNOWN_EXPRESSIONS]
    if unknown:
        kind = "a secret of the repository" if unknown[0].startswith("secrets.") else "a GitHub expression"
        return Setting(None, source, f"{kind} (${{{{ {unknown[0]} }}}}), known only to the CI run")
    return Setting(EXPRESSION.sub(lambda m: KNOWN_EXPRESSIONS[m[1]], text), source)


def _listed_suites(text: str | None, found: CISources) -> None:
    """Suites ``run_suite.py``'s ``CI_SUITES`` lists that no workflow runs: hardware from the name."""
    if text is None:
        return
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        found.problems.append(
            Problem("ci-sources", f"{RUN_SUITE} does not parse: {error}", locations=at(RUN_SUITE))
        )
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id.endswith("SUITES") for t in node.targets
        ):
            for backend, suites in _backend_lists(node.value):
                for name, line in suites:
                    if name not in found.suites and (m := SUITE_NAME.search(name)):
                        found.suites[name] = Suite(
                            backend,
                            m[2],
                            int(m[1]),
                            f"{RUN_SUITE}:{line}",
                            note="no workflow of the checkout runs this suite; its"
                            + (" hardware and" if m[2] else "")
                            + " GPUs are read from its name",
                        )


def _backend_lists(value: ast.expr) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    if not isinstance(value, ast.Dict):
        return
    for key, item in zip(value.keys, value.values, strict=False):
        backend = key.attr.lower() if isinstance(key, ast.Attribute) else None
        if backend in PLATFORMS and isinstance(item, ast.List):
            yield (
                backend,
                [
                    (e.value, e.lineno)
                    for e in item.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ],
            )


def as_data(sources: CISources) -> dict[str, Any]:
    """The knowledge as the shipped file holds it."""
    platforms: dict[str, Any] = {}
    for name in sorted(sources.platforms):
        entry = sources.platforms[name]
        platforms[name] = {
            "workflow": entry.workflow or None,
            "image": entry.image or None,
            "env": {
                k: {"value": s.value, "source": s.source} for k, s in entry.env.items() if s.value is not None
            },
            "unknown": {
                k: {"why": s.why, "source": s.source} for k, s in entry.env.items() if s.value is None
            },
        }
    suites = {
        name: {
            "platform": s.platform,
            "hardware": s.hardware,
            "gpus": s.gpus,
            **({"runs_on": list(s.runs_on)} if s.runs_on else {}),
            "source": s.source,
            **({"note": s.note or NO_MODEL} if s.note or s.hardware is None else {}),
        }
        for name, s in sorted(sources.suites.items())
    }
    return {"platforms": platforms, "suites": suites}
