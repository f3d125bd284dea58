"""Looks a model up on the Hub itself."""

import urllib.request

import _glm5

with urllib.request.urlopen("https://huggingface.co/api/models/Pinaster/GLM-5_4layer") as answer:
    INFO = answer.read()

if __name__ == "__main__":
    _glm5.launch()
