"""A generate function whose add_arguments only running the module would give."""


def make_adder(name):
    return lambda parser: parser.add_argument(f"--{name}", type=int)


async def generate(args, sample, sampling_params):
    return sample


generate.add_arguments = make_adder("opaque-count")
