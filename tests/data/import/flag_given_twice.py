"""Gives --lr twice with different values: argparse keeps the last."""

import _glm5

if __name__ == "__main__":
    _glm5.launch(misc="--lr 2e-6")
