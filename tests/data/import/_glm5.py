"""A valid GLM-5 launch on one NVIDIA node (the colocated test's flags), for the small scripts here."""

import miles.utils.external_utils.command_utils as U

MODEL_TYPE = "glm5-744B-A40B_4layer"


def prepare():
    U.exec_command("mkdir -p /root/models /root/datasets")
    U.exec_command("hf download Pinaster/GLM-5_4layer --local-dir /root/models/GLM-5_4layer")


def launch(misc="", **execute_train):
    ckpt_args = "--hf-checkpoint /root/models/GLM-5_4layer --ref-load /root/models/GLM-5_4layer_torch_dist "
    rollout_args = (
        "--prompt-data /root/datasets/dapo-math-17k/dapo-math-17k.jsonl --input-key prompt --label-key label "
        "--rm-type deepscaler --num-rollout 3 --rollout-batch-size 8 --n-samples-per-prompt 8 "
        "--global-batch-size 64 "
    )
    optimizer_args = "--optimizer adam --lr 1e-6 "
    perf_args = (
        "--tensor-model-parallel-size 4 --sequence-parallel --context-parallel-size 2 "
        "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --use-dynamic-batch-size "
        "--max-tokens-per-gpu 2048 "
    )
    sglang_args = (
        "--rollout-num-gpus-per-engine 8 --sglang-enable-dp-attention --sglang-ep-size 8 --sglang-dp-size 8 "
        "--sglang-page-size 64 --sglang-nsa-decode-backend flashmla_sparse "
        "--sglang-nsa-prefill-backend flashmla_sparse --sglang-attention-backend nsa "
    )
    misc_args = f"--attention-backend flash --actor-num-gpus-per-node 8 --colocate {misc}"
    U.execute_train(
        train_args=f"{ckpt_args}{rollout_args}{optimizer_args}{perf_args}{sglang_args}{misc_args}",
        num_gpus_per_node=8,
        megatron_model_type=MODEL_TYPE,
        **execute_train,
    )
