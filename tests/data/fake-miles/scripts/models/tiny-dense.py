import os


def model_args(layers=None):
    layers = layers or os.environ.get("TINY_LAYERS") or "2"
    return f"--num-layers {layers} --hidden-size 64\n--num-attention-heads 4 --swiglu "
