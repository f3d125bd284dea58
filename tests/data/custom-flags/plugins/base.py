"""A generate function that adds one flag."""


async def generate(args, sample, sampling_params):
    return sample


def _add_arguments(parser):
    parser.add_argument("--agent-turns", type=int, default=4)


generate.add_arguments = _add_arguments
