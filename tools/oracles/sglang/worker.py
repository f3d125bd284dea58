"""Ask the real SGLang whether it accepts an engine's arguments, as on a given GPU.

Run with the interpreter of the oracle venv of a miles version (SGLang 0.5.10 for the PR era
dc8b499b: tools/oracles/sglang/build.sh; SGLang 0.5.16 for miles main 31f1ca96: the miles oracle,
tools/oracles/miles/build.sh)::

    .oracles/sglang/bin/python tools/oracles/sglang/worker.py --platform mi355x
    .oracles/miles/bin/python tools/oracles/sglang/worker.py --platform h200 --miles-version 31f1ca96

Protocol: one JSON object per line on stdin, ``{"id": ..., "args": {...ServerArgs kwargs...},
"env": {optional SGLANG_* variables for this check}}``, or ``{"id": ..., "engine": {...}, "env": ...}``:
an engine as miles' ``_compute_server_args`` builds it (see ``engine_kwargs``); one JSON object per
line on stdout, ``{"id", "accepted", "error_type", "error", "resolved", "warnings", "kwargs",
"sglang"}`` (``kwargs``: what ServerArgs got; ``sglang``: its version). ``accepted`` is null
when there is no verdict (a bad request, or an ImportError: the venv is incomplete).
``resolved`` holds RESOLVED_FIELDS after SGLang's adjustments (null when rejected);
``warnings`` what SGLang logged at WARNING or above during the check. Everything else
(SGLang's logging, prints) goes to stderr.

What one check does is what an SGLang engine does before it spawns anything:
``ServerArgs(**kwargs)`` (all of ``__post_init__``'s adjustments and checks), then
``check_server_args()``. The worker adds what miles adds (``model_path``, ``trust_remote_code``,
``skip_server_warmup``, ``gpu_id_step=1``) and, as miles' argparse does, rejects a value outside
an option's ``choices``.

SGLang decides its platform once, at import (``is_cuda``/``is_hip``/``is_sm100_supported`` are
``lru_cache``d), so the platform is presented *before* ``import sglang`` and a process serves one
platform only. Nothing here runs a kernel: the kernel packages imported on the way are stubs that
raise when called.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import json
import logging
import os
import stat
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any, NoReturn


@dataclass(frozen=True)
class Platform:
    name: str  # what torch.cuda.get_device_name() says
    capability: tuple[int, int]
    memory_mib: int  # what nvidia-smi / rocminfo report per GPU, in MiB
    sm_count: int
    gcn_arch: str | None = None  # ROCm only; its presence makes the platform HIP

    @property
    def is_rocm(self) -> bool:
        return self.gcn_arch is not None


# Memory per GPU in MiB, about what nvidia-smi / rocminfo report for the real parts. Only the
# band matters to SGLang (<90 GiB, <160 GiB, more: chunked prefill 8192 / 8192 / 16384).
PLATFORMS: dict[str, Platform] = {
    "h100": Platform("NVIDIA H100 80GB HBM3", (9, 0), 81559, 132),
    "h200": Platform("NVIDIA H200", (9, 0), 143771, 132),
    "b200": Platform("NVIDIA B200", (10, 0), 183359, 148),
    "mi300x": Platform("AMD Instinct MI300X", (9, 4), 196592, 304, "gfx942:sramecc+:xnack-"),
    "mi355x": Platform("AMD Instinct MI355X", (9, 5), 294896, 256, "gfx950:sramecc+:xnack-"),
}
DEVICE_COUNT = 8
NVIDIA_DRIVER = "580.95.05"
HIP_VERSION = "7.0.51831"

# What miles always passes to an engine (shared/reference/oracles.md).
MILES_FIXED_ARGS = {"trust_remote_code": True, "skip_server_warmup": True, "gpu_id_step": 1}
# What each miles version's _compute_server_args (miles/backends/sglang_utils/sglang_engine.py)
# adds besides, for every engine of a cell: the draft weights' CPU backup (both), /metrics (main).
MILES_ENGINE_ARGS: dict[str, dict[str, Any]] = {
    "dc8b499b": {**MILES_FIXED_ARGS, "enable_draft_weights_cpu_backup": True},
    "31f1ca96": {**MILES_FIXED_ARGS, "enable_draft_weights_cpu_backup": True, "enable_metrics": True},
}
PARALLEL_SIZE_FLAGS = ("--tp-size", "--dp-size", "--pp-size", "--ep-size")
# miles switches that become ServerArgs fields in _compute_server_args (both versions).
MILES_SWITCHES = {
    "use_rollout_routing_replay": ("enable_return_routed_experts", True),
    "fp16": ("dtype", "float16"),
}
# SGLang 0.5.16 renamed the NSA fields DSA (the --nsa-* flags stay, as deprecated aliases);
# a verdict names them as 0.5.10 did so that one client reads both.
RENAMED_FIELDS = {"nsa_prefill_backend": "dsa_prefill_backend", "nsa_decode_backend": "dsa_decode_backend"}

RESOLVED_FIELDS = (
    "tp_size",
    "dp_size",
    "ep_size",
    "pp_size",
    "enable_dp_attention",
    "enable_dp_lm_head",
    "page_size",
    "chunked_prefill_size",
    "attention_backend",
    "nsa_prefill_backend",
    "nsa_decode_backend",
    "moe_a2a_backend",
    "moe_dense_tp_size",
    "disable_custom_all_reduce",
    "kv_cache_dtype",
    "nnodes",
)

# A 4-layer GLM-5 (Pinaster/GLM-5_4layer): the shape miles' GLM-5 tests serve.
GLM5_CONFIG: dict[str, Any] = {
    "architectures": ["GlmMoeDsaForCausalLM"],
    "model_type": "glm_moe_dsa",
    "vocab_size": 154880,
    "hidden_size": 6144,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 4,
    "mlp_layer_types": ["dense", "dense", "dense", "sparse"],
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "routed_scaling_factor": 2.5,
    "n_group": 1,
    "topk_group": 1,
    "norm_topk_prob": True,
    "q_lora_rank": 2048,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 192,
    "v_head_dim": 256,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 32,
    "hidden_act": "silu",
    "max_position_embeddings": 202752,
    "rms_norm_eps": 1e-05,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000},
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 0,
    "eos_token_id": 1,
}

# Kernel packages of miles' images that SGLang imports at module level (sgl_kernel, aiter) or
# looks for (flashinfer decides the default sampling backend). They cannot load without a
# driver; argument handling never calls into them.
STUBBED_PACKAGES = {"cuda": ("sgl_kernel", "flashinfer"), "rocm": ("sgl_kernel", "aiter")}

log = logging.getLogger("sglang_oracle")


# --------------------------------------------------------------------------- platform


def fake_tools(bin_dir: Path, platform: Platform) -> None:
    """Put `nvidia-smi` / `rocminfo` on PATH printing what the real ones print, so that
    SGLang's own parsing of them runs."""
    if platform.gcn_arch is not None:  # ROCm
        arch = platform.gcn_arch.split(":")[0]
        kb = platform.memory_mib * 1024
        agent = (
            f"  Name:                    {arch}\n"
            "  Pool Info:\n"
            "    Pool 1\n"
            "      Segment:                 GLOBAL; FLAGS: COARSE GRAINED\n"
            f"      Size:                    {kb}({kb:#x}) KB\n"
        )
        body = "cat <<'EOF'\n" + agent * DEVICE_COUNT + "EOF\n"
        write_script(bin_dir / "rocminfo", body)
    else:
        cap = "{}.{}".format(*platform.capability)
        body = (
            'case "$*" in\n'
            f"  *memory.total*) for i in $(seq {DEVICE_COUNT}); do echo {platform.memory_mib}; done ;;\n"
            f"  *compute_cap*) for i in $(seq {DEVICE_COUNT}); do echo {cap}; done ;;\n"
            f"  *driver_version*) for i in $(seq {DEVICE_COUNT}); do echo {NVIDIA_DRIVER}; done ;;\n"
            '  *) echo "fake nvidia-smi (sglang oracle): $*" >&2; exit 1 ;;\n'
            "esac\n"
        )
        write_script(bin_dir / "nvidia-smi", body)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def write_script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def present_platform(platform: Platform) -> None:
    """Make torch report `platform` (8 GPUs). Must run before `import sglang`."""
    import torch

    total = platform.memory_mib * 1024 * 1024
    props = types.SimpleNamespace(
        name=platform.name,
        major=platform.capability[0],
        minor=platform.capability[1],
        total_memory=total,
        multi_processor_count=platform.sm_count,
        gcnArchName=platform.gcn_arch or "",
        is_integrated=False,
        is_multi_gpu_board=False,
        warp_size=64 if platform.is_rocm else 32,
        L2_cache_size=256 * 1024 * 1024 if platform.is_rocm else 50 * 1024 * 1024,
        uuid="GPU-00000000-0000-0000-0000-000000000000",
    )
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: DEVICE_COUNT
    cuda.get_device_capability = lambda device=None: platform.capability
    cuda.get_device_properties = lambda device=None: props
    cuda.get_device_name = lambda device=None: platform.name
    cuda.mem_get_info = lambda device=None: (total, total)
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.synchronize = lambda device=None: None
    cuda.get_arch_list = lambda: []
    if platform.is_rocm:
        torch.version.hip = HIP_VERSION
        torch.version.cuda = None
    elif torch.version.cuda is None:  # a CPU build of torch
        torch.version.cuda = "12.9"
    os.environ.setdefault(
        "CUDA_VISIBLE_DEVICES" if not platform.is_rocm else "HIP_VISIBLE_DEVICES",
        ",".join(str(i) for i in range(DEVICE_COUNT)),
    )


class _Stub:
    """Any attribute is another stub; calling one raises: it is import-only."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> _Stub:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Stub(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self._name} is an import-only stub of the SGLang oracle")


class _StubModule(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Stub(f"{self.__name__}.{attr}")


class _StubFinder(MetaPathFinder, Loader):
    def __init__(self, packages: tuple[str, ...]) -> None:
        self.packages = packages

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname.split(".")[0] in self.packages:
            return ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        module.__dict__["__version__"] = "0.0.0+oracle-stub"
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def install_stubs(platform: Platform) -> None:
    sys.meta_path.insert(0, _StubFinder(STUBBED_PACKAGES["rocm" if platform.is_rocm else "cuda"]))


def write_model_dir(root: Path) -> Path:
    model = root / "GLM-5_4layer"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(GLM5_CONFIG, indent=2))
    return model


# --------------------------------------------------------------------------- checking


class WarningCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().strip())


@contextlib.contextmanager
def preserved_environ() -> Iterator[None]:
    """ServerArgs writes os.environ (envs.X.set); keep each check independent."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for key in [key for key in os.environ if key not in saved]:
            del os.environ[key]
        for key, value in saved.items():
            if os.environ.get(key) != value:
                os.environ[key] = value


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip()
    if text or not isinstance(exc, AssertionError):
        return text or type(exc).__name__
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"bare assert in {frame.name}:{frame.lineno}"


class Oracle:
    def __init__(self, model_path: str, verbose: bool, miles_version: str = "dc8b499b") -> None:
        from sglang.srt import server_args as sa

        self.sa = sa
        self.model_path = model_path
        self.miles_version = miles_version
        self.choices = self._argparse_choices(sa.ServerArgs)
        self.parser = _RaisingParser(add_help=False, allow_abbrev=False)
        sa.ServerArgs.add_cli_args(self.parser)
        for action in self.parser._actions:
            # only what a flag sets, as miles' copy of args.sglang_*; miles itself gives model_path
            action.default, action.required = argparse.SUPPRESS, False
            # miles stores the parallel sizes under the fields' short names whatever alias argparse
            # would take the dest from (0.5.10: --data-parallel-size before --dp-size)
            short = [f[2:].replace("-", "_") for f in action.option_strings if f in PARALLEL_SIZE_FLAGS]
            if short:
                action.dest = short[0]
        self.collector = WarningCollector()
        sglang_logger = logging.getLogger("sglang")
        sglang_logger.addHandler(self.collector)
        sglang_logger.setLevel(logging.INFO if verbose else logging.WARNING)
        sglang_logger.propagate = verbose
        self._memoize_memory_probe()
        self.version = importlib.metadata.version("sglang")

    @staticmethod
    def _argparse_choices(server_args_cls: Any) -> dict[str, tuple[str, list[Any]]]:
        parser = argparse.ArgumentParser(add_help=False)
        server_args_cls.add_cli_args(parser)
        return {
            action.dest: (action.option_strings[0], list(action.choices))
            for action in parser._actions
            if action.choices is not None and action.option_strings
        }

    def _memoize_memory_probe(self) -> None:
        """The first check runs SGLang's real probe (our fake nvidia-smi/rocminfo); the
        value cannot change within a process, so later checks reuse it."""
        probe = self.sa.get_device_memory_capacity
        cache: dict[Any, Any] = {}

        def memoized(device: Any = None) -> Any:
            if device not in cache:
                cache[device] = probe(device)
            return cache[device]

        self.sa.get_device_memory_capacity = memoized

    def _check_choices(self, kwargs: dict[str, Any]) -> None:
        for key, value in kwargs.items():
            if key in self.choices and value is not None:
                flag, allowed = self.choices[key]
                values = value if isinstance(value, list) else [value]
                for item in values:
                    if item not in allowed:
                        raise ArgumentChoiceError(
                            f"argument {flag}: invalid choice: {item!r} "
                            f"(choose from {', '.join(map(repr, allowed))})"
                        )

    def engine_kwargs(self, engine: dict[str, Any]) -> dict[str, Any]:
        """ServerArgs kwargs as miles' _compute_server_args builds them for one engine:
        ``engine`` = {"gpus_per_engine", "gpus_per_node", "flags": the --sglang-* argv of the
        launch, "miles": {switch: value} of MILES_SWITCHES}. The flags go through SGLang's own
        argparse, as miles registers it under the --sglang- prefix (choices, deprecated aliases);
        a field set by miles itself wins over a flag, as there."""
        gpus, per_node = _count(engine, "gpus_per_engine"), _count(engine, "gpus_per_node")
        flags = engine.get("flags", [])
        if not (isinstance(flags, list) and all(isinstance(f, str) for f in flags)):
            raise TypeError("'engine.flags' must be a list of strings")
        if any(f.startswith("--") and not f.startswith("--sglang-") for f in flags):
            raise TypeError("'engine.flags' holds only --sglang-* flags")
        given = vars(
            self.parser.parse_args([f"--{f[9:]}" if f.startswith("--sglang-") else f for f in flags])
        )
        kwargs: dict[str, Any] = {
            **MILES_ENGINE_ARGS[self.miles_version],
            "nnodes": max(1, gpus // per_node),
            "tp_size": gpus,
            "dp_size": given.pop("dp_size", 1),
            "pp_size": given.pop("pp_size", 1),
            "ep_size": given.pop("ep_size", 1),
        }
        switches = engine.get("miles") or {}
        if not isinstance(switches, dict) or set(switches) - MILES_SWITCHES.keys():
            raise TypeError(f"'engine.miles' holds only {', '.join(MILES_SWITCHES)}")
        for switch, (field, value) in MILES_SWITCHES.items():
            if switches.get(switch):
                kwargs[field] = value
        fields = {f.name for f in dataclasses.fields(self.sa.ServerArgs)}
        kwargs.update({k: v for k, v in given.items() if k in fields and k not in kwargs})
        return kwargs

    def check_engine(self, engine: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
        """The verdict on one engine as miles builds it; a flag its argparse refuses is a rejection."""
        try:
            kwargs = self.engine_kwargs(engine)
        except ArgumentChoiceError as exc:
            return {"accepted": False, "error_type": type(exc).__name__, "error": str(exc), "resolved": None,
                    "warnings": [], "kwargs": None}  # fmt: skip
        return {**self.check(kwargs, env, built=True), "kwargs": kwargs}

    def check(
        self, args: dict[str, Any], env: dict[str, str] | None = None, *, built: bool = False
    ) -> dict[str, Any]:
        kwargs = args if built else {**args, **MILES_FIXED_ARGS}
        kwargs = {**kwargs, "model_path": self.model_path}
        self.collector.messages = []
        with preserved_environ():
            os.environ.update(env or {})
            try:
                self._check_choices(kwargs)
                server_args = self.sa.ServerArgs(**kwargs)
                server_args.check_server_args()
            except ImportError as exc:  # the oracle venv is incomplete: no verdict
                return {
                    "accepted": None,
                    "error_type": "OracleBroken",
                    "error": f"{type(exc).__name__}: {exc}",
                    "resolved": None,
                    "warnings": self.collector.messages,
                }
            except Exception as exc:  # any other exception is SGLang refusing the arguments
                log.debug("rejected", exc_info=True)
                return {
                    "accepted": False,
                    "error_type": type(exc).__name__,
                    "error": describe_error(exc),
                    "resolved": None,
                    "warnings": self.collector.messages,
                }
        return {
            "accepted": True,
            "error_type": None,
            "error": None,
            "resolved": {name: _field(server_args, name) for name in RESOLVED_FIELDS},
            "warnings": self.collector.messages,
        }


class ArgumentChoiceError(ValueError):
    """What argparse would say (miles parses --sglang-* with SGLang's own choices)."""


class _RaisingParser(argparse.ArgumentParser):
    """SGLang's own CLI, as miles registers it; a bad value raises instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise ArgumentChoiceError(message)


def _field(server_args: Any, name: str) -> Any:
    return (
        getattr(server_args, name)
        if hasattr(server_args, name)
        else getattr(server_args, RENAMED_FIELDS[name])
    )


def _count(engine: dict[str, Any], key: str) -> int:
    value = engine.get(key)
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        raise TypeError(f"'engine.{key}' must be a positive integer, not {value!r}")
    return value


# --------------------------------------------------------------------------- protocol


def parse_request(line: str) -> tuple[Any, dict[str, Any], bool, dict[str, str]]:
    """(id, args or engine, whether it is an engine, env)."""
    request = json.loads(line)
    if not isinstance(request, dict):
        raise TypeError("a request is a JSON object")
    if ("args" in request) == ("engine" in request):
        raise TypeError("a request holds 'args' or 'engine', one of them")
    is_engine = "engine" in request
    args, env = request.get("engine" if is_engine else "args"), request.get("env") or {}
    if not isinstance(args, dict):
        raise TypeError(f"'{'engine' if is_engine else 'args'}' must be an object")
    if not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
        raise TypeError("'env' must be an object of strings")
    return request.get("id"), args, is_engine, env


def answer(oracle: Oracle, line: str) -> dict[str, Any]:
    try:
        request_id, args, is_engine, env = parse_request(line)
        started = time.perf_counter()
        verdict = oracle.check_engine(args, env) if is_engine else oracle.check(args, env)
        log.debug("check %s took %.1f ms", request_id, 1000 * (time.perf_counter() - started))
    except (TypeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        try:
            request_id = json.loads(line).get("id")
        except Exception:
            request_id = None
        return {
            "id": request_id,
            "accepted": None,  # no verdict
            "error_type": "ProtocolError",
            "error": f"bad request: {exc}",
            "resolved": None,
            "warnings": [],
        }
    return {"id": request_id, **verdict, "sglang": oracle.version}


def serve(oracle: Oracle, lines: Any, out: Any) -> None:
    for line in lines:
        if not line.strip():
            continue
        out.write(json.dumps(answer(oracle, line), default=str) + "\n")
        out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", required=True, choices=sorted(PLATFORMS))
    parser.add_argument(
        "--miles-version",
        default="dc8b499b",
        choices=sorted(MILES_ENGINE_ARGS),
        help="whose _compute_server_args builds an 'engine' request (default: the PR era, dc8b499b)",
    )
    parser.add_argument("--verbose", action="store_true", help="SGLang's INFO logs to stderr")
    options = parser.parse_args(argv)

    # stdout carries the protocol only: keep a private handle on it, and send fd 1
    # (anything SGLang or a library prints) to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if options.verbose else logging.INFO,
        format="[sglang-oracle %(levelname)s] %(message)s",
    )

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # Verdicts must not depend on the caller's shell: SGLANG_* settings come per request
    # ("env"), and SGLANG_IS_IN_CI would turn SGLang's warnings into crashes.
    inherited = sorted(key for key in os.environ if key.startswith("SGLANG_"))
    for key in inherited:
        del os.environ[key]
    if inherited:
        log.info("ignoring inherited %s", ", ".join(inherited))

    platform = PLATFORMS[options.platform]
    with tempfile.TemporaryDirectory(prefix="sglang-oracle-") as tmp:
        root = Path(tmp)
        (root / "bin").mkdir()
        fake_tools(root / "bin", platform)
        present_platform(platform)
        install_stubs(platform)
        model_path = write_model_dir(root)
        started = time.perf_counter()
        oracle = Oracle(str(model_path), options.verbose, options.miles_version)
        probe = oracle.check({})  # the default engine (tp 1) must pass, else the venv is broken
        if not probe["accepted"]:
            log.error(
                "SGLang rejects a default engine on %s: %s: %s",
                options.platform,
                probe["error_type"],
                probe["error"],
            )
            return 3
        log.info(
            "SGLang ready as %s (%s) in %.1f s",
            options.platform,
            platform.name,
            time.perf_counter() - started,
        )
        serve(oracle, sys.stdin, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
