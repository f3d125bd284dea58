"""Launches, then reads what the run saved, as miles' checkpoint tests do before their second launch."""

import _glm5

if __name__ == "__main__":
    _glm5.launch(misc="--save /root/shared_data/ckpt ")
    with open("/root/shared_data/ckpt/latest_checkpointed_iteration.txt") as f:
        step = int(f.read())
