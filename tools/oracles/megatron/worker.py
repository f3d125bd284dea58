#!/usr/bin/env python3
"""Megatron oracle worker: asks the real Megatron (megatron-core 0.19.2 for miles' PR era, or
radixark's Megatron-LM fork for miles main under the miles oracle venv, with Megatron-LM's training
arguments) whether an actor configuration launches.

Run with the oracle venv's python (see build.sh):

    worker.py --platform {h100,h200,b200,mi300x,mi355x}

Protocol (JSON lines). Request on stdin, one per line:

    {"id": "x", "world_size": 8, "argv": ["--num-layers", "4", ...],
     "env": {"CUDA_DEVICE_MAX_CONNECTIONS": null}}        # "env" optional

Reply on stdout, one per request, in order:

    {"id": "x", "accepted": true|false,
     "stage": null|"parse"|"validate_args"|"initialize_model_parallel"|"batch"|
              "transformer_config"|"optimizer_config",
     "error_type": str|null, "error": str|null, "where": "file.py:LINE"|null,
     "derived": {"dp", "tp", "pp", "cp", "ep", "etp", "expert_dp"}|null,
     "warnings": [str, ...]}

The first line written is a ready banner: {"ready": true, "platform": ..., ...}.
Everything else (Megatron's prints, warnings, logs) goes to stderr.

What one check runs, in miles' order (miles/utils/arguments.py parse_args and
miles/backends/megatron_utils/initialize.py init):
  1. parse_args            Megatron-LM's parser, with the defaults miles resets
                           (e.g. --micro-batch-size defaults to 1); argv holds
                           Megatron flags only (miles-only flags are unknown here)
  2. validate_args         after miles' set_default_megatron_args (rank 0,
                           world size = the request's, distributed optimizer on,
                           bf16 unless fp16, seq-length 4096 if unset, ...),
                           then miles' post-validate tweaks (variable sequence
                           lengths, allgather -> alltoall, the PP=1 assert)
  3. initialize_model_parallel  with a faked single-process torch.distributed
                           that reports the world size and rank 0
  4. batch                 init_num_microbatches_calculator (global batch %
                           (micro batch x DP))
  5. transformer_config    core_transformer_config_from_args (MLATransformerConfig
                           for --multi-latent-attention)
  6. optimizer_config      OptimizerConfig from the args, as miles' model.py builds
                           it (e.g. --use-precision-aware-optimizer needs adam)

The platform (GPU compute capability, Transformer Engine version, ROCm or CUDA
torch) is presented before megatron is imported, since some checks read it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import sys
import time
import traceback
import types
import warnings

from packaging.version import Version

# ---------------------------------------------------------------------------
# Platforms. Compute capability as torch reports it; the Transformer Engine
# version is the one miles' images build (docker/Dockerfile: TE 2.10.0 for
# CUDA; Dockerfile.rocm_MI350-5: ROCm TE branch v2.8_rocm; MI300 pins a ROCm TE
# commit, presented as 2.8.0 as well).
PLATFORMS = {
    "h100": {
        "name": "NVIDIA H100 80GB HBM3",
        "cc": (9, 0),
        "mem_gib": 80,
        "sms": 132,
        "te": "2.10.0",
        "rocm": False,
    },
    "h200": {"name": "NVIDIA H200", "cc": (9, 0), "mem_gib": 141, "sms": 132, "te": "2.10.0", "rocm": False},
    "b200": {"name": "NVIDIA B200", "cc": (10, 0), "mem_gib": 180, "sms": 148, "te": "2.10.0", "rocm": False},
    "mi300x": {
        "name": "AMD Instinct MI300X",
        "cc": (9, 4),
        "mem_gib": 192,
        "sms": 304,
        "te": "2.8.0",
        "rocm": True,
        "gcn": "gfx942:sramecc+:xnack-",
    },
    "mi355x": {
        "name": "AMD Instinct MI355X",
        "cc": (9, 5),
        "mem_gib": 288,
        "sms": 256,
        "te": "2.8.0",
        "rocm": True,
        "gcn": "gfx950:sramecc+:xnack-",
    },
}

# Environment miles' job runtime env sets for the Megatron backend.
MILES_ENV = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}

# Megatron arguments whose defaults miles resets (reset_arg in miles' arguments).
MILES_DEFAULT_RESETS = {
    "--distributed-backend": "nccl",
    "--distributed-timeout-minutes": 10,
    "--global-batch-size": None,
    "--micro-batch-size": 1,
    "--eval-interval": None,
    "--load": None,
    "--save": None,
    "--save-interval": None,
    "--seed": 1234,
    "--clip-grad": 1.0,
    "--lr": 1e-6,
    "--mtp-num-layers": None,
    "--mtp-loss-scaling-factor": 0.2,
    "--padded-vocab-size": None,
}

STAGES = (
    "parse",
    "validate_args",
    "initialize_model_parallel",
    "batch",
    "transformer_config",
    "optimizer_config",
)

log = logging.getLogger("megatron-oracle")


class _Reject(Exception):
    def __init__(self, stage, exc, where=None, message=None):
        super().__init__(stage)
        self.stage = stage
        self.exc = exc
        self.where = where
        self.message = message


# ---------------------------------------------------------------------------
# Presenting the platform and a fake single-process torch.distributed.


class _DeviceProperties:
    def __init__(self, spec):
        self.name = spec["name"]
        self.major, self.minor = spec["cc"]
        self.total_memory = spec["mem_gib"] * (1 << 30)
        self.multi_processor_count = spec["sms"]
        self.is_integrated = False
        self.is_multi_gpu_board = False
        self.L2_cache_size = 50 * (1 << 20)
        self.warp_size = 64 if spec["rocm"] else 32
        self.gcnArchName = spec.get("gcn", "")
        self.uuid = "00000000-0000-0000-0000-000000000000"

    def __repr__(self):
        return f"_DeviceProperties(name={self.name!r}, major={self.major}, minor={self.minor})"


class FakeGroup:
    """A process-group handle as returned by the fake new_group."""

    def __init__(self, ranks, backend=None, desc=None):
        self.ranks = list(ranks) if ranks is not None else None
        self.backend = backend
        self.desc = desc

    def size(self):
        return len(self.ranks) if self.ranks is not None else _FAKE["world_size"]

    def rank(self):
        me = _FAKE["rank"]
        if self.ranks is None:
            return me
        return self.ranks.index(me) if me in self.ranks else -1

    def __repr__(self):
        return f"FakeGroup({self.desc}, {self.ranks})"


_FAKE = {"world_size": 1, "rank": 0}  # the one process: its world and its rank in it


def present_platform(platform, te_version):
    spec = PLATFORMS[platform]
    import torch
    import torch.distributed as dist

    props = _DeviceProperties(spec)
    n_devices = 8

    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: n_devices
    torch.cuda.get_device_capability = lambda device=None: tuple(spec["cc"])
    torch.cuda.get_device_properties = lambda device=None: props
    torch.cuda.get_device_name = lambda device=None: spec["name"]
    torch.cuda.current_device = lambda: 0
    torch.cuda.set_device = lambda device: None
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.is_bf16_supported = lambda *a, **k: True
    if spec["rocm"]:
        torch.version.hip = "7.0.51831"
        torch.version.cuda = None
    else:
        torch.version.hip = None
        if not torch.version.cuda:
            torch.version.cuda = "13.0"

    # torch.distributed: one process that reports the requested world size and
    # rank (0 unless _FAKE["rank"] says otherwise), and hands out group handles.
    # Same verdicts as real gloo on the layouts tried (shared/reference/oracles.md).
    def get_world_size(group=None):
        if isinstance(group, FakeGroup):
            return group.size()
        return _FAKE["world_size"]

    def get_rank(group=None):
        if isinstance(group, FakeGroup):
            return group.rank()
        return _FAKE["rank"]

    def new_group(
        ranks=None,
        timeout=None,
        backend=None,
        pg_options=None,
        use_local_synchronization=False,
        group_desc=None,
        **kwargs,
    ):
        if ranks is not None:
            ranks = sorted(ranks)
            for r in ranks:
                if not 0 <= r < _FAKE["world_size"]:
                    raise ValueError(f"Invalid rank {r} for new_group in world of size {_FAKE['world_size']}")
        return FakeGroup(ranks, backend, group_desc)

    def get_process_group_ranks(group):
        if isinstance(group, FakeGroup) and group.ranks is not None:
            return list(group.ranks)
        return list(range(_FAKE["world_size"]))

    dist.is_initialized = lambda: True
    dist.get_world_size = get_world_size
    dist.get_rank = get_rank
    dist.new_group = new_group
    dist.get_process_group_ranks = get_process_group_ranks
    dist.barrier = lambda *a, **k: None
    dist.destroy_process_group = lambda *a, **k: None
    dist.get_backend = lambda group=None: (
        group.backend if isinstance(group, FakeGroup) and group.backend else "nccl"
    )
    return spec


def _te_stub(name):
    def f(*a, **k):
        raise RuntimeError(f"{name} is a Transformer Engine stub in the oracle")

    f.__name__ = name
    return f


# (minimum TE version, module, names): functions Megatron takes from Transformer
# Engine at import time and whose mere presence (not None) some config checks
# test: --moe-permute-fusion (TE >= 2.1), RoPE fusion for non-MLA models (TE >= 1.4).
_TE_FUNCTIONS = (
    (
        "2.1.0",
        "megatron.core.transformer.moe.moe_utils",
        (
            "fused_permute",
            "fused_permute_with_probs",
            "fused_sort_chunks_by_index",
            "fused_sort_chunks_by_index_with_probs",
            "fused_unpermute",
        ),
    ),
    (
        "2.1.0",
        "megatron.core.extensions.transformer_engine",
        (
            "fused_permute",
            "fused_permute_with_probs",
            "fused_sort_chunks_by_index",
            "fused_sort_chunks_by_index_with_probs",
            "fused_unpermute",
        ),
    ),
    (
        "1.4.0",
        "megatron.core.models.common.embeddings.rope_utils",
        ("fused_apply_rotary_pos_emb", "fused_apply_rotary_pos_emb_thd"),
    ),
)


def present_transformer_engine(te_version):
    """Transformer Engine itself cannot load without a GPU. Present its version
    (megatron.core.utils caches it; validate_args and the configs compare it) and
    the TE functions whose presence config checks test. Stubs raise if called; no
    argument or config code calls them."""
    import importlib

    import megatron.core.utils as mcu
    from packaging.version import Version

    mcu._te_version = Version(te_version)
    for min_version, module, names in _TE_FUNCTIONS:
        if Version(te_version) < Version(min_version):
            continue
        mod = importlib.import_module(module)
        for name in names:
            if getattr(mod, name, None) is None:
                setattr(mod, name, _te_stub(name))


@contextlib.contextmanager
def transformer_engine_fused_adam():
    """OptimizerConfig checks, for --use-precision-aware-optimizer without CPU
    offload, that TE's FusedAdam takes master_weight_dtype, exp_avg_dtype,
    exp_avg_sq_dtype and use_decoupled_grad (TE >= 2.x). Present a stub module
    for the duration of that check only."""
    names = ("transformer_engine", "transformer_engine.pytorch", "transformer_engine.pytorch.optimizers")
    if any(n in sys.modules for n in names):
        yield
        return

    class FusedAdam:  # signature only
        def __init__(
            self,
            params,
            lr=1e-3,
            betas=(0.9, 0.999),
            eps=1e-8,
            weight_decay=0.0,
            master_weights=False,
            master_weight_dtype=None,
            exp_avg_dtype=None,
            exp_avg_sq_dtype=None,
            use_decoupled_grad=False,
            **kwargs,
        ):
            raise RuntimeError("FusedAdam is a Transformer Engine stub in the oracle")

    te = types.ModuleType("transformer_engine")
    te_pt = types.ModuleType("transformer_engine.pytorch")
    te_opt = types.ModuleType("transformer_engine.pytorch.optimizers")
    te_opt.FusedAdam = FusedAdam
    te.pytorch = te_pt
    te_pt.optimizers = te_opt
    sys.modules.update(zip(names, (te, te_pt, te_opt), strict=False))
    try:
        yield
    finally:
        for n in names:
            sys.modules.pop(n, None)


# ---------------------------------------------------------------------------
# One check.


class Oracle:
    def __init__(self, platform, te_version, verbose=False):
        self.verbose = verbose
        self.platform = platform
        self.te_version = te_version
        self.spec = present_platform(platform, te_version)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import megatron.core.config as mconfig
            import megatron.core.num_microbatches_calculator as mnum
            import megatron.core.parallel_state as mps
            import megatron.training.arguments as margs
            import megatron.training.global_vars as mgv

            # megatron-core 0.19.2 keeps it in argument_utils; radixark's fork (miles main) in arguments
            core_transformer_config_from_args = getattr(margs, "core_transformer_config_from_args", None)
            if core_transformer_config_from_args is None:
                from megatron.training.argument_utils import core_transformer_config_from_args

            present_transformer_engine(te_version)
        self.mconfig = mconfig
        self.mnum = mnum
        self.mps = mps
        self.margs = margs
        self.mgv = mgv
        self.core_transformer_config_from_args = core_transformer_config_from_args

    # -- helpers --------------------------------------------------------------
    @staticmethod
    def _miles_defaults(parser):
        for action in parser._actions:
            for opt in action.option_strings:
                if opt in MILES_DEFAULT_RESETS:
                    action.default = MILES_DEFAULT_RESETS[opt]
        return parser

    def reset(self):
        self.mps.destroy_model_parallel()
        self.mgv.unset_global_variables()
        self.mnum.destroy_num_microbatches_calculator()
        self.mconfig.set_experimental_flag(False)

    @staticmethod
    def _where(exc):
        tb = traceback.extract_tb(exc.__traceback__)
        if not tb:
            return None
        frame = tb[-1]
        path = frame.filename
        if os.path.abspath(path) == os.path.abspath(__file__):
            return f"miles step (replicated in worker.py:{frame.lineno})"
        marker = "site-packages" + os.sep
        if marker in path:
            path = path.split(marker, 1)[1]
        return f"{path}:{frame.lineno}"

    @staticmethod
    def _bare_message(exc):
        tb = traceback.extract_tb(exc.__traceback__)
        if tb and tb[-1].line:
            return f"bare assert: {tb[-1].line.strip()}"
        return repr(exc)

    def _run_stage(self, stage, fn, *a, **k):
        try:
            return fn(*a, **k)
        except _Reject:
            raise
        except SystemExit as e:
            raise _Reject(stage, e) from e
        except Exception as e:
            raise _Reject(stage, e) from e

    # -- the pipeline ---------------------------------------------------------
    def _parse(self, argv):
        saved_argv = sys.argv
        buf = io.StringIO()
        sys.argv = ["train.py", *list(argv)]
        try:
            with contextlib.redirect_stderr(buf):
                return self.margs.parse_args(extra_args_provider=self._miles_defaults)
        except SystemExit as e:
            text = buf.getvalue()
            sys.stderr.write(text)
            msg = None
            for line in reversed(text.splitlines()):
                if "error:" in line:
                    msg = line.split("error:", 1)[1].strip()
                    break
            raise _Reject("parse", e, where="argparse", message=msg or f"SystemExit({e.code})") from e
        except Exception as e:
            sys.stderr.write(buf.getvalue())
            raise _Reject("parse", e) from e
        finally:
            sys.argv = saved_argv

    @staticmethod
    def _set_default_megatron_args(args, world_size):
        # miles/utils/arguments.py parse_args + set_default_megatron_args
        args.rank = 0
        args.world_size = world_size
        args.use_distributed_optimizer = True  # "always use zero optimizer"
        args.bf16 = not args.fp16
        if args.seq_length is None:
            args.seq_length = 4096
        args.max_position_embeddings = args.seq_length
        if hasattr(args, "rope_type") and args.rope_type is None:
            args.rope_type = "yarn" if args.multi_latent_attention else "rope"
        return args

    def _validate(self, args):
        self.margs.validate_args(args)  # miles: megatron_validate_args(args), no defaults
        # miles' own steps right after megatron's validate_args
        args.variable_seq_lengths = True
        if getattr(args, "moe_token_dispatcher_type", None) == "allgather":
            args.moe_token_dispatcher_type = "alltoall"
        if args.pipeline_model_parallel_size == 1:
            assert (
                args.decoder_first_pipeline_num_layers is None
                and args.decoder_last_pipeline_num_layers is None
            ), (
                "decoder_first_pipeline_num_layers and decoder_last_pipeline_num_layers should "
                "be None when pipeline_model_parallel_size is 1."
            )

    def _initialize_model_parallel(self, args):
        # miles/backends/megatron_utils/initialize.py: set_args, experimental flag,
        # _initialize_distributed
        self.mgv.set_args(args)
        if args.enable_experimental:
            self.mconfig.set_experimental_flag(True)
        self.mps.initialize_model_parallel(
            args.tensor_model_parallel_size,
            args.pipeline_model_parallel_size,
            args.virtual_pipeline_model_parallel_size,
            pipeline_model_parallel_comm_backend=args.pipeline_model_parallel_comm_backend,
            context_parallel_size=args.context_parallel_size,
            hierarchical_context_parallel_sizes=args.hierarchical_context_parallel_sizes,
            expert_model_parallel_size=args.expert_model_parallel_size,
            num_distributed_optimizer_instances=args.num_distributed_optimizer_instances,
            expert_tensor_parallel_size=args.expert_tensor_parallel_size,
            distributed_timeout_minutes=args.distributed_timeout_minutes,
            nccl_communicator_config_path=args.nccl_communicator_config_path,
            order="tp-cp-ep-dp-pp" if not args.use_tp_pp_dp_mapping else "tp-cp-ep-pp-dp",
            # miles passes args.enable_gloo_process_groups (its Megatron-LM fork);
            # megatron-core 0.19.2 names the flag use_gloo_process_groups.
            create_gloo_process_groups=getattr(
                args, "enable_gloo_process_groups", getattr(args, "use_gloo_process_groups", True)
            ),
        )

    def _batch(self, args):
        self.mnum.init_num_microbatches_calculator(
            args.rank,
            args.rampup_batch_size,
            args.global_batch_size,
            args.micro_batch_size,
            args.data_parallel_size,
            args.decrease_batch_size_if_needed,
        )

    @staticmethod
    def _derived(args, world_size):
        tp = args.tensor_model_parallel_size
        pp = args.pipeline_model_parallel_size
        cp = args.context_parallel_size
        ep = args.expert_model_parallel_size
        etp = args.expert_tensor_parallel_size
        if etp is None:
            etp = tp
        denom = etp * ep * pp
        dense = tp * pp * cp
        return {
            "dp": world_size // dense if dense and world_size % dense == 0 else None,
            "tp": tp,
            "pp": pp,
            "cp": cp,
            "ep": ep,
            "etp": etp,
            # None when W % (ETP x EP x PP) != 0 (initialize_model_parallel rejects it)
            "expert_dp": world_size // denom if denom and world_size % denom == 0 else None,
        }

    def _optimizer_config(self, args):
        # miles/backends/megatron_utils/model.py: OptimizerConfig from every
        # same-named arg, built after the model (TransformerConfig).
        import dataclasses

        from megatron.core.optimizer import OptimizerConfig

        kwargs = {
            f.name: getattr(args, f.name)
            for f in dataclasses.fields(OptimizerConfig)
            if hasattr(args, f.name)
        }
        te = Version(self.te_version) >= Version("2.0.0")
        with transformer_engine_fused_adam() if te else contextlib.nullcontext():
            return OptimizerConfig(**kwargs)

    def check(self, world_size, argv, env=None):
        _FAKE["world_size"] = int(world_size)
        run_env = dict(MILES_ENV)
        run_env.update(env or {})
        saved_env = {k: os.environ.get(k) for k in run_env}
        for k, v in run_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        captured = []
        handler = _ListHandler(captured)
        root = logging.getLogger()
        root.addHandler(handler)
        args = None
        derived = None
        result = {
            "accepted": True,
            "stage": None,
            "error_type": None,
            "error": None,
            "where": None,
            "derived": None,
        }
        try:
            self.reset()
            # Megatron prints (print_rank_0: the argument dump, ...) to stdout, which
            # is stderr in this process; drop them unless --verbose.
            quiet = contextlib.nullcontext() if self.verbose else contextlib.redirect_stdout(io.StringIO())
            with quiet, warnings.catch_warnings(record=True) as wlist:
                warnings.simplefilter("always")
                try:
                    args = self._parse(argv)
                    self._set_default_megatron_args(args, int(world_size))
                    self._run_stage("validate_args", self._validate, args)
                    derived = self._derived(args, int(world_size))
                    self._run_stage("initialize_model_parallel", self._initialize_model_parallel, args)
                    self._run_stage("batch", self._batch, args)
                    self._run_stage("transformer_config", self.core_transformer_config_from_args, args)
                    self._run_stage("optimizer_config", self._optimizer_config, args)
                except _Reject as r:
                    exc = r.exc
                    msg = r.message if r.message is not None else str(exc)
                    if not msg:
                        msg = self._bare_message(exc)
                    result.update(
                        accepted=False,
                        stage=r.stage,
                        error_type=type(exc).__name__,
                        error=msg,
                        where=r.where or self._where(exc),
                    )
                    log.info("rejected at %s: %s: %s", r.stage, type(exc).__name__, msg)
            for w in wlist:
                if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning)):
                    continue
                captured.append(f"{w.category.__name__}: {w.message}")
        finally:
            root.removeHandler(handler)
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            try:
                self.reset()
            except Exception:
                log.exception("reset failed")
        result["derived"] = derived
        seen = set()
        result["warnings"] = [m for m in captured if not (m in seen or seen.add(m))]
        return result


class _ListHandler(logging.Handler):
    def __init__(self, sink):
        super().__init__(level=logging.WARNING)
        self.sink = sink

    def emit(self, record):
        with contextlib.suppress(Exception):
            self.sink.append(f"{record.levelname}: {record.getMessage()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", required=True, choices=sorted(PLATFORMS))
    ap.add_argument(
        "--te-version", default=None, help="Transformer Engine version to present (default: the platform's)"
    )
    ap.add_argument(
        "--verbose",
        action="store_true",
        help="let Megatron's own prints (argument dump, ...) through to stderr",
    )
    ns = ap.parse_args()

    # The protocol owns the real stdout; anything else printed (Megatron's
    # print_rank_0, C-level output) goes to stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="[megatron-oracle %(levelname)s] %(message)s"
    )
    log.setLevel(logging.INFO)

    t0 = time.monotonic()
    te_version = ns.te_version or PLATFORMS[ns.platform]["te"]
    oracle = Oracle(ns.platform, te_version, verbose=ns.verbose)
    import importlib.metadata

    import torch

    try:
        mcore_version = importlib.metadata.version("megatron-core")
    except importlib.metadata.PackageNotFoundError:
        import megatron.core as mc

        mcore_version = getattr(mc, "__version__", None)

    banner = {
        "ready": True,
        "platform": ns.platform,
        "compute_capability": list(PLATFORMS[ns.platform]["cc"]),
        "te_version": te_version,
        "rocm": PLATFORMS[ns.platform]["rocm"],
        "megatron_core": mcore_version,
        "torch": torch.__version__,
        "startup_s": round(time.monotonic() - t0, 3),
    }
    proto.write(json.dumps(banner) + "\n")
    proto.flush()

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            argv = req["argv"]
            if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
                raise ValueError("argv must be a list of strings")
            world_size = int(req["world_size"])
            if world_size < 1:
                raise ValueError("world_size must be >= 1")
            t = time.monotonic()
            res = oracle.check(world_size, argv, req.get("env"))
            res["elapsed_s"] = round(time.monotonic() - t, 4)
            out = {"id": rid, **res}
        except Exception as e:
            out = {
                "id": rid,
                "accepted": False,
                "stage": None,
                "error_type": "BadRequest",
                "error": f"{type(e).__name__}: {e}",
                "where": None,
                "derived": None,
                "warnings": [],
            }
        proto.write(json.dumps(out, default=str) + "\n")
        proto.flush()


if __name__ == "__main__":
    main()
