"""Host-side client for the SGLang KV oracle (tools/oracles/sglang/kv_worker.py).

Usable from the project's own venv: it imports neither torch nor sglang. One worker run answers a
list of requests (see the worker's docstring), in the SGLang oracle venv of a miles version
(``sglang_oracle.VENVS``: 0.5.10 for the PR era, 0.5.16 for miles main)::

    with SGLangKVOracle(miles_version=MAIN) as oracle:
        (reply,) = oracle.ask([{"id": "qwen3-8b", "config": {...}, "tp": 4}])
        reply["cells"], reply["max_total_num_tokens"]
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any

from tests.differential.sglang_oracle import PLATFORMS, PR_ERA, REPO_ROOT, OracleError, SGLangOracle

KV_WORKER = REPO_ROOT / "tools" / "oracles" / "sglang" / "kv_worker.py"


class SGLangKVOracle:
    """SGLang's own KV sizing, one worker process per ``ask``."""

    def __init__(
        self, *, miles_version: str = PR_ERA, platform: str = "h200", timeout: float = 120.0
    ) -> None:
        self.miles_version, self.platform, self.timeout = miles_version, platform, timeout
        self.python = SGLangOracle.default_python(miles_version)

    @classmethod
    def unavailable_reason(cls, miles_version: str = PR_ERA, platform: str = "h200") -> str | None:
        if platform not in PLATFORMS:
            raise ValueError(f"unknown platform {platform!r}; one of {', '.join(PLATFORMS)}")
        if not KV_WORKER.is_file():
            return f"SGLang KV oracle worker missing: {KV_WORKER}"
        return SGLangOracle.unavailable_reason(miles_version)

    @classmethod
    def available(cls, miles_version: str = PR_ERA, platform: str = "h200") -> bool:
        return cls.unavailable_reason(miles_version, platform) is None

    def __enter__(self) -> SGLangKVOracle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass  # each ask's process has ended when it returns

    def ask(self, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            done = subprocess.run(
                [str(self.python), str(KV_WORKER), "--platform", self.platform],
                input=json.dumps(list(requests)),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise OracleError(f"the KV worker did not answer in {self.timeout:.0f} s") from exc
        tail = "\n".join(done.stderr.splitlines()[-30:])
        if done.returncode != 0:
            raise OracleError(f"the KV worker exited ({done.returncode}):\n{tail}")
        replies: list[dict[str, Any]] = json.loads(done.stdout)
        if [reply.get("id") for reply in replies] != [request.get("id") for request in requests]:
            raise OracleError(f"the KV worker answered other requests than asked:\n{tail}")
        return replies
