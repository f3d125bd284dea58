"""Gives --lr twice with different values."""

import _glm5

if __name__ == "__main__":
    _glm5.launch(misc="--lr 2e-6")
