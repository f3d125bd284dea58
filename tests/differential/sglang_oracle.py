"""Host-side client for the SGLang oracle (tools/oracles/sglang/worker.py).

Usable from the project's own venv: it imports neither torch nor sglang. One worker
process per platform, started on first use and stopped on close():

    with SGLangOracle() as oracle:
        verdict = oracle.check("mi355x", {"tp_size": 2, "dp_size": 2, "ep_size": 2,
                                          "enable_dp_attention": True})
        verdict["accepted"], verdict["error_type"], verdict["error"], verdict["resolved"]

`args` are SGLang ServerArgs keyword arguments as miles passes them (the `--sglang-*`
values without the prefix, `tp_size` = rollout-num-gpus-per-engine); the worker adds
model_path (a GLM-5-shaped config), trust_remote_code, skip_server_warmup, gpu_id_step=1.
A verdict is the worker's reply: {"id", "accepted", "error_type", "error", "resolved",
"warnings"}; "resolved" holds the values after SGLang's adjustments (None when rejected).

`check_engine(platform, engine)` asks about an engine as miles' own _compute_server_args builds
it (see the worker's engine_kwargs); the verdict's "kwargs" say what ServerArgs got.

The SGLang of each miles version (VENVS): the PR era dc8b499b runs SGLang 0.5.10, built by
tools/oracles/sglang/build.sh into <repo>/.oracles/sglang (RUN_MATRIX_SGLANG_ORACLE_PYTHON
overrides its python); miles main 31f1ca96 runs SGLang 0.5.16, the miles oracle venv of
tools/oracles/miles/build.sh, <repo>/.oracles/miles (RUN_MATRIX_MILES_ORACLE_PYTHON). 0.5.16 from
PyPI stands in for miles' `sglang-miles` branch (tools/oracles/miles/README.md says what differs).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = REPO_ROOT / "tools" / "oracles" / "sglang" / "worker.py"
DEFAULT_PYTHON = REPO_ROOT / ".oracles" / "sglang" / "bin" / "python"
PYTHON_ENV = "RUN_MATRIX_SGLANG_ORACLE_PYTHON"
PR_ERA, MAIN = "dc8b499b", "31f1ca96"


@dataclass(frozen=True)
class Venv:
    sglang: str  # the version it holds
    python: Path
    env: str  # the variable that overrides python
    build: str


VENVS = {
    PR_ERA: Venv("0.5.10", DEFAULT_PYTHON, PYTHON_ENV, "tools/oracles/sglang/build.sh"),
    MAIN: Venv(
        "0.5.16",
        REPO_ROOT / ".oracles" / "miles" / "bin" / "python",
        "RUN_MATRIX_MILES_ORACLE_PYTHON",
        "tools/oracles/miles/build.sh",
    ),
}

PLATFORMS = ("h100", "h200", "b200", "mi300x", "mi355x")
ROCM_PLATFORMS = ("mi300x", "mi355x")


class OracleError(RuntimeError):
    """The oracle could not give a verdict (worker died, timed out, venv incomplete)."""


class _Worker:
    """One `worker.py --platform P` process; replies are read by a thread so that a
    wedged worker becomes a timeout, not a hang."""

    def __init__(self, python: Path, platform: str, timeout: float, miles_version: str) -> None:
        self.platform = platform
        self.timeout = timeout
        # closed in stop(); a file, not a pipe, so a chatty worker can never block on it
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self.process = subprocess.Popen(
            [str(python), str(WORKER), "--platform", platform, "--miles-version", miles_version],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            bufsize=1,
        )
        self.replies: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name=f"sglang-oracle-{platform}", daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(line)
        self.replies.put(None)

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise OracleError(f"the {self.platform} worker is gone ({exc}):\n{self.stderr_tail()}") from exc
        try:
            line = self.replies.get(timeout=timeout)
        except queue.Empty:
            raise OracleError(
                f"the {self.platform} worker did not answer in {timeout:.0f} s:\n{self.stderr_tail()}"
            ) from None
        if line is None:
            self.process.wait(timeout=10)
            raise OracleError(
                f"the {self.platform} worker exited ({self.process.returncode}):\n{self.stderr_tail()}"
            )
        reply: dict[str, Any] = json.loads(line)
        return reply

    def stderr_tail(self, lines: int = 30) -> str:
        self.stderr.seek(0)
        return "\n".join(self.stderr.read().decode(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Close stdin (the worker exits at EOF); escalate only on this process."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):
                    stream.close()
        self.stderr.close()


class SGLangOracle:
    """The real SGLang of a miles version (VENVS) deciding on engine arguments, one worker per platform."""

    def __init__(
        self,
        python: str | os.PathLike[str] | None = None,
        *,
        miles_version: str = PR_ERA,
        startup_timeout: float = 180.0,
        check_timeout: float = 60.0,
    ) -> None:
        if miles_version not in VENVS:
            raise ValueError(f"no SGLang oracle for miles {miles_version!r}; one of {', '.join(VENVS)}")
        self.miles_version = miles_version
        self.python = Path(python) if python is not None else self.default_python(miles_version)
        self.startup_timeout = startup_timeout
        self.check_timeout = check_timeout
        self._workers: dict[str, _Worker] = {}
        self._ids = itertools.count(1)

    @staticmethod
    def default_python(miles_version: str = PR_ERA) -> Path:
        venv = VENVS[miles_version]
        return Path(os.environ.get(venv.env) or venv.python)

    @classmethod
    def unavailable_reason(cls, miles_version: str = PR_ERA) -> str | None:
        python, venv = cls.default_python(miles_version), VENVS[miles_version]
        if not WORKER.is_file():
            return f"SGLang oracle worker missing: {WORKER}"
        if not (python.is_file() and os.access(python, os.X_OK)):
            if os.environ.get(venv.env):
                return f"SGLang {venv.sglang} oracle python {python} (from ${venv.env}) does not exist"
            return f"SGLang {venv.sglang} oracle venv of miles {miles_version} not built: no {python} (run {venv.build})"
        return None

    @classmethod
    def available(cls, miles_version: str = PR_ERA) -> bool:
        return cls.unavailable_reason(miles_version) is None

    def __enter__(self) -> SGLangOracle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def check(
        self, platform: str, args: Mapping[str, Any], env: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """SGLang's verdict on `args` (ServerArgs kwargs, without model_path) on `platform`;
        `env` sets SGLANG_* variables for this check only (the worker ignores inherited ones)."""
        return self._ask(platform, {"args": dict(args), "env": dict(env or {})})

    def check_engine(
        self, platform: str, engine: Mapping[str, Any], env: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """SGLang's verdict on one engine as this miles version builds its ServerArgs: `engine` =
        {"gpus_per_engine", "gpus_per_node", "flags": [--sglang-* argv], "miles": {switch: bool}}."""
        return self._ask(platform, {"engine": dict(engine), "env": dict(env or {})})

    def _ask(self, platform: str, request: dict[str, Any]) -> dict[str, Any]:
        if platform not in PLATFORMS:
            raise ValueError(f"unknown platform {platform!r}; one of {', '.join(PLATFORMS)}")
        worker = self._workers.get(platform)
        first = worker is None
        if worker is None:
            worker = self._workers[platform] = _Worker(
                self.python, platform, self.check_timeout, self.miles_version
            )
        request_id = f"{platform}-{next(self._ids)}"
        reply = worker.ask(
            {"id": request_id, **request}, self.startup_timeout if first else self.check_timeout
        )
        if reply.get("id") != request_id:
            raise OracleError(f"the {platform} worker answered {reply.get('id')!r} to {request_id!r}")
        if reply.get("accepted") is None:
            raise OracleError(f"no verdict from the {platform} worker: {reply.get('error')}")
        return reply

    def close(self) -> None:
        workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            worker.stop()
