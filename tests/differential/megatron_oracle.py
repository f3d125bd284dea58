"""Host-side client for the Megatron oracle (tools/oracles/megatron/worker.py).

Usable from the project's own venv: it imports neither torch nor megatron. One
worker process per platform, started on first use and stopped on close():

    with MegatronOracle() as oracle:
        verdict = oracle.check("h200", 8, GLM5_MODEL_ARGS + ["--tensor-model-parallel-size", "4", ...])
        verdict["accepted"], verdict["stage"], verdict["error"], verdict["derived"]

A verdict is the worker's reply: {"id", "accepted", "stage", "error_type",
"error", "where", "derived", "warnings", "elapsed_s"}; "stage" is None when
accepted, else one of STAGES (the first stage of miles' start-up that rejects).

The Megatron of each miles version (VENVS): the PR era dc8b499b asks megatron-core 0.19.2, built by
tools/oracles/megatron/build.sh into <repo>/.oracles/megatron (RUN_MATRIX_MEGATRON_ORACLE_PYTHON
overrides its python); miles main 31f1ca96 asks radixark's Megatron-LM fork in the miles oracle venv,
tools/oracles/miles/build.sh, <repo>/.oracles/miles (RUN_MATRIX_MILES_ORACLE_PYTHON).
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = REPO_ROOT / "tools" / "oracles" / "megatron" / "worker.py"
DEFAULT_PYTHON = REPO_ROOT / ".oracles" / "megatron" / "bin" / "python"
PYTHON_ENV = "RUN_MATRIX_MEGATRON_ORACLE_PYTHON"
PR_ERA, MAIN = "dc8b499b", "31f1ca96"
# miles version -> (its venv's python, the variable that overrides it, what builds it)
VENVS = {
    PR_ERA: (DEFAULT_PYTHON, PYTHON_ENV, "tools/oracles/megatron/build.sh"),
    MAIN: (
        REPO_ROOT / ".oracles" / "miles" / "bin" / "python",
        "RUN_MATRIX_MILES_ORACLE_PYTHON",
        "tools/oracles/miles/build.sh",
    ),
}

PLATFORMS = ("h100", "h200", "b200", "mi300x", "mi355x")
STAGES = (
    "parse",
    "validate_args",
    "initialize_model_parallel",
    "batch",
    "transformer_config",
    "optimizer_config",
)


def _flags(text: str) -> tuple[str, ...]:
    """Command-line words, whitespace-separated (no value here contains a space)."""
    return tuple(text.split())


# MODEL_ARGS of miles' scripts/models/glm5-744B-A40B_4layer.sh, read from the fake checkout's copy.
_MODEL_SCRIPT = (
    REPO_ROOT / "tests" / "data" / "fake-miles" / "scripts" / "models" / "glm5-744B-A40B_4layer.sh"
)
GLM5_MODEL_ARGS = tuple(
    shlex.split(_MODEL_SCRIPT.read_text().split("MODEL_ARGS=(", 1)[1].split(")", 1)[0], comments=True)
)

# The Megatron flags (miles-only flags left out) of the two upstream GLM-5 tests,
# in the order they pass them (shared/reference/miles-facts.md §2): what both share first.
_GLM5_SHARED_ARGS = _flags(
    """
    --load /root/shared_data/checkpoints
    --save /root/shared_data/checkpoints
    --save-interval 20
    --global-batch-size 64
    --optimizer adam
    --lr 1e-6
    --lr-decay-style constant
    --weight-decay 0.1
    --adam-beta1 0.9
    --adam-beta2 0.98
    """
)
GLM5_NV_ACTOR_ARGS = _GLM5_SHARED_ARGS + _flags(
    """
    --tensor-model-parallel-size 4
    --sequence-parallel
    --pipeline-model-parallel-size 1
    --context-parallel-size 2
    --expert-model-parallel-size 8
    --expert-tensor-parallel-size 1
    --recompute-granularity full
    --recompute-method uniform
    --recompute-num-layers 1
    --attention-dropout 0.0
    --hidden-dropout 0.0
    --accumulate-allreduce-grads-in-fp32
    --attention-softmax-in-fp32
    --attention-backend flash
    --moe-enable-deepep
    --moe-token-dispatcher-type flex
    """
)
GLM5_NV_WORLD_SIZE = 8  # actor-num-nodes 1 x actor-num-gpus-per-node 8

GLM5_ROCM_ACTOR_ARGS = _GLM5_SHARED_ARGS + _flags(
    """
    --optimizer-cpu-offload
    --overlap-cpu-optimizer-d2h-h2d
    --use-precision-aware-optimizer
    --tensor-model-parallel-size 1
    --pipeline-model-parallel-size 1
    --context-parallel-size 1
    --expert-model-parallel-size 4
    --expert-tensor-parallel-size 1
    --attention-dropout 0.0
    --hidden-dropout 0.0
    --accumulate-allreduce-grads-in-fp32
    --attention-softmax-in-fp32
    --attention-backend fused
    --moe-token-dispatcher-type alltoall
    --moe-grouped-gemm
    --moe-permute-fusion
    """
)
GLM5_ROCM_WORLD_SIZE = 4  # actor-num-nodes 1 x actor-num-gpus-per-node 4


class OracleError(RuntimeError):
    """The oracle itself failed (worker missing, crashed, timed out, bad reply)."""


def _python_path(miles_version: str = PR_ERA) -> Path:
    default, variable, _ = VENVS[miles_version]
    override = os.environ.get(variable)
    return Path(override) if override else default


class _Worker:
    def __init__(self, python: Path, platform: str, start_timeout: float, log_path: Path | None):
        cmd = [str(python), "-u", str(WORKER), "--platform", platform]
        env = dict(os.environ)
        env.setdefault("PYTHONWARNINGS", "ignore")
        # the worker's stderr (Megatron's warnings, tracebacks): the given log file,
        # else an anonymous temporary file whose tail explains a failed start
        self._log: IO[bytes] | None = (
            open(log_path, "ab") if log_path else tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        )
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                text=True,
                bufsize=1,
                env=env,
                cwd=str(REPO_ROOT),
            )
        except OSError:
            self._log.close()
            raise
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.platform = platform
        banner = self._next(start_timeout)
        if not banner.get("ready"):
            self.close()
            raise OracleError(f"megatron oracle worker for {platform}: bad banner {banner!r}")
        self.banner = banner

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise OracleError(
                f"megatron oracle worker for {self.platform}: no reply in {timeout} s"
            ) from None
        if line is None:
            rc = self.proc.wait()
            raise OracleError(
                f"megatron oracle worker for {self.platform} exited (rc={rc}); stderr ends:\n{self.stderr_tail()}"
            )
        try:
            reply = json.loads(line)
        except json.JSONDecodeError as e:
            raise OracleError(f"megatron oracle worker for {self.platform}: bad line {line!r}") from e
        if not isinstance(reply, dict):
            raise OracleError(f"megatron oracle worker for {self.platform}: bad line {line!r}")
        return reply

    def stderr_tail(self, limit: int = 3000) -> str:
        if self._log is None or self._log.closed:
            return ""
        try:
            self._log.flush()
            size = self._log.seek(0, os.SEEK_END)
            self._log.seek(max(0, size - limit))
            return self._log.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def request(self, req: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        if self.proc.poll() is not None:
            raise OracleError(f"megatron oracle worker for {self.platform} is not running")
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise OracleError(f"megatron oracle worker for {self.platform}: {e}") from e
        reply = self._next(timeout)
        if reply.get("id") != req.get("id"):
            raise OracleError(f"megatron oracle: reply {reply.get('id')!r} for request {req.get('id')!r}")
        return reply

    def close(self) -> None:
        proc = self.proc
        if proc.poll() is None:
            try:
                if proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, OSError):
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._log:
            self._log.close()
            self._log = None


class MegatronOracle:
    """Asks the real Megatron whether a miles actor configuration gets through
    start-up. One lazily started worker per platform; close() (or leaving the
    context manager) stops the workers this instance started and nothing else."""

    def __init__(
        self,
        python: str | os.PathLike[str] | None = None,
        *,
        miles_version: str = PR_ERA,
        start_timeout: float = 180.0,
        check_timeout: float = 60.0,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if miles_version not in VENVS:
            raise ValueError(f"no Megatron oracle for miles {miles_version!r}; one of {', '.join(VENVS)}")
        self.miles_version = miles_version
        self.python = Path(python) if python else _python_path(miles_version)
        self.start_timeout = start_timeout
        self.check_timeout = check_timeout
        self.log_path = Path(log_path) if log_path else None
        self._workers: dict[str, _Worker] = {}
        self._counter = 0
        self._lock = threading.Lock()

    @classmethod
    def available(cls, miles_version: str = PR_ERA) -> bool:
        """True when the oracle venv's python and the worker script exist."""
        py = _python_path(miles_version)
        return WORKER.is_file() and py.exists() and os.access(py, os.X_OK)

    @classmethod
    def unavailable_reason(cls, miles_version: str = PR_ERA) -> str:
        py, (_, variable, build) = _python_path(miles_version), VENVS[miles_version]
        if not WORKER.is_file():
            return f"megatron oracle worker missing: {WORKER}"
        return (
            f"the megatron oracle venv of miles {miles_version} is missing ({py} not found); build it with "
            f"{build}, or set {variable}"
        )

    def __enter__(self) -> MegatronOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def worker_info(self, platform: str) -> dict[str, Any]:
        """The worker's banner (versions, compute capability, TE version presented)."""
        return dict(self._worker(platform).banner)

    def _worker(self, platform: str) -> _Worker:
        if platform not in PLATFORMS:
            raise ValueError(f"unknown platform {platform!r}; expected one of {PLATFORMS}")
        w = self._workers.get(platform)
        if w is None or w.proc.poll() is not None:
            if not self.python.exists():
                raise OracleError(self.unavailable_reason(self.miles_version))
            w = _Worker(self.python, platform, self.start_timeout, self.log_path)
            self._workers[platform] = w
        return w

    def check(
        self,
        platform: str,
        world_size: int,
        argv: Sequence[str],
        env: Mapping[str, str | None] | None = None,
    ) -> dict[str, Any]:
        """One verdict. argv: Megatron flags (MODEL_ARGS plus the actor's
        parallelism/batch/optimizer flags; no miles-only flags). env: variables
        to set (None unsets) on top of miles' CUDA_DEVICE_MAX_CONNECTIONS=1."""
        with self._lock:
            self._counter += 1
            req: dict[str, Any] = {
                "id": f"{platform}-{self._counter}",
                "world_size": int(world_size),
                "argv": [str(a) for a in argv],
            }
            if env:
                req["env"] = dict(env)
            return self._worker(platform).request(req, self.check_timeout)

    def close(self) -> None:
        with self._lock:
            workers, self._workers = self._workers, {}
        for w in workers.values():
            w.close()
