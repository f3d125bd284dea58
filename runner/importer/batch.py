"""batch: a folder import's request, and the single imports of its steps, one by one or side by side.

A step (the cases alone, the cases as overlays, the AMD variants) hands its jobs to ``Folder.batch``
(``suite.py``: a pool of worker processes, ``workers.py``; else one after another here) and gets
back, per job, the import or why it was refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import Location, Problem, RunMatrixError, SpecError
from runner.importer import Imported, Request, import_test, together

Job = tuple[Path, Path, Path | None, str | None]  # test, output, base, hardware
Batch = Callable[[list[Request]], list[Any]]  # the imports of one step, each Imported or its problems


@dataclass(frozen=True)
class Folder:
    tests: Path
    output: Path
    hardware: str | None = None  # for the CUDA cases (default: each one's CI suite)
    rocm_hardware: str | None = None  # for the AMD cases (default: each one's CI suite)
    miles_root: Path | None = None
    force: bool = False
    timeout: float = 60.0
    trust_checkout: bool = False
    allow_system_steps: bool = False
    cache: Path | None = None  # where recordings are kept (``recordings.py``); None: none kept
    hf_configs: tuple[tuple[str, Path], ...] = ()  # --hf-config: repo -> its config.json
    batch: Batch | None = None  # runs the imports of one step (default: one after another)
    progress: Callable[[Path, str, str], None] | None = None  # a test's outcome, once it is known


def runner(
    request: Folder, refused: dict[str, list[Problem]]
) -> Callable[[list[Job]], list[Imported | None]]:
    """Run a step's imports (``request.batch``: side by side) into the staging tree; a refused one is
    None, its problems in ``refused`` (an import that succeeds later takes its test out again)."""
    batch = request.batch or _one_by_one

    def run(jobs: list[Job]) -> list[Imported | None]:
        requests = [request_of(request, job) for job in jobs]
        results: list[Imported | None] = []
        for (test, *_), found in zip(jobs, batch(requests) if requests else [], strict=True):
            if isinstance(found, Imported):
                refused.pop(test.name, None)
            else:
                refused[test.name] = list(found)
            results.append(found if isinstance(found, Imported) else None)
        return results

    return run


def request_of(options: Folder, job: Job) -> Request:
    """The single import of ``job`` with a folder import's ``options`` (into its staging tree: force)."""
    test, output, base, hardware = job
    return Request(
        test,
        output,
        base,
        hardware,
        options.miles_root,
        force=True,
        timeout=options.timeout,
        trust_checkout=options.trust_checkout,
        allow_system_steps=options.allow_system_steps,
        cache=options.cache,
        hf_configs=options.hf_configs,
        components=output.parent / "components",  # a folder's components stay in it: -o OUT writes under OUT
    )


def _one_by_one(requests: list[Request]) -> list[Any]:
    return [attempt(one) for one in requests]


def answer(one: Request | together.Look) -> Any:
    """A worker's answer: an import's (``attempt``), or the recording an import lacks (``together``)."""
    return together.next_wanted(one) if isinstance(one, together.Look) else attempt(one)


def attempt(one: Request) -> Imported | list[Problem]:
    """One import: what it wrote, or why it was refused (an error of the environment, such as a
    sandbox that cannot start, refuses it too: the other tests may still import)."""
    try:
        return import_test(one)
    except SpecError as exc:
        return list(exc.problems)
    except RunMatrixError as exc:
        return [Problem("import", str(exc), locations=(Location(one.script),))]
