"""GLM-5 4-layer, PPO with a critic, actor and critic colocated with the rollout (train.py).

Written for run-matrix's import tests: a critic (PPO), colocated training, and the few-GPU
switch (MILES_TEST_FEW_GPU: 4 GPUs instead of 8, everything halved). Helpers of miles' newer
shape (exec_command_cpu) are used for the prepare commands.
"""

import os

import miles.utils.external_utils.command_utils as U

FEW_GPU = U.get_bool_env_var("MILES_TEST_FEW_GPU", "0")

MODEL = "GLM-5_4layer"
MODEL_TYPE = "glm5-744B-A40B_4layer"
NUM_GPUS = 4 if FEW_GPU else 8
ACTOR_GPUS = CRITIC_GPUS = NUM_GPUS // 2


def prepare():
    U.exec_command_cpu("mkdir -p /root/models /root/datasets")
    U.exec_command_cpu(f"hf download Pinaster/{MODEL} --local-dir /root/models/{MODEL}")
    U.hf_download_dataset("zhuzilin/dapo-math-17k")
    U.convert_checkpoint(
        model_name=MODEL, megatron_model_type=MODEL_TYPE, num_gpus_per_node=NUM_GPUS, dir_dst="/root/models"
    )


def execute():
    ckpt_args = f"--hf-checkpoint /root/models/{MODEL} --ref-load /root/models/{MODEL}_torch_dist "
    rollout_args = (
        "--prompt-data /root/datasets/dapo-math-17k/dapo-math-17k.jsonl --input-key prompt --label-key label "
        "--apply-chat-template --rollout-shuffle --rm-type deepscaler --num-rollout 3 --rollout-batch-size 8 "
        "--n-samples-per-prompt 8 --rollout-max-response-len 100 --rollout-temperature 0.8 "
        "--global-batch-size 64 "
    )
    ppo_args = (
        "--advantage-estimator ppo --use-kl-loss --kl-loss-coef 0.00 --kl-loss-type k1 --kl-coef 0.00 "
        "--entropy-coef 0.00 --eps-clip 4e-4 --normalize-advantages "
    )
    critic_args = (
        f"--critic-num-nodes 1 --critic-num-gpus-per-node {CRITIC_GPUS} --critic-lr 1e-5 "
        "--num-critic-only-steps 1 "
    )
    optimizer_args = "--optimizer adam --lr 1e-6 --lr-decay-style constant --weight-decay 0.1 "
    perf_args = (
        f"--tensor-model-parallel-size 1 --expert-model-parallel-size {ACTOR_GPUS} "
        "--use-dynamic-batch-size --max-tokens-per-gpu 2048 "
    )
    sglang_args = (
        f"--rollout-num-gpus-per-engine {NUM_GPUS} --sglang-mem-fraction-static 0.70 "
        f"--sglang-enable-dp-attention --sglang-dp-size {NUM_GPUS} --sglang-ep-size {NUM_GPUS} "
        "--sglang-page-size 64 --sglang-attention-backend nsa --sglang-nsa-decode-backend flashmla_sparse "
        "--sglang-nsa-prefill-backend flashmla_sparse "
    )
    misc_args = (
        "--attention-dropout 0.0 --hidden-dropout 0.0 --attention-backend flash "
        f"--actor-num-nodes 1 --actor-num-gpus-per-node {ACTOR_GPUS} --num-gpus-per-node {NUM_GPUS} --colocate "
    )
    train_args = (
        f"{ckpt_args}{rollout_args}{optimizer_args}{ppo_args}{critic_args}"
        f"{U.get_default_wandb_args(__file__)}{perf_args}{sglang_args}--ci-test {misc_args}"
    )
    U.execute_train(train_args=train_args, num_gpus_per_node=NUM_GPUS, megatron_model_type=MODEL_TYPE)


if __name__ == "__main__":
    prepare()
    os.environ.pop("http_proxy", None)
    execute()
