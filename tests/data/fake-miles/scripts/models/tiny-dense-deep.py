from model_args_utils import load_sibling_model_args


def model_args():
    return load_sibling_model_args(__file__, "tiny-dense", layers="8") + " --qk-layernorm"
