"""A rollout function class whose flags come from its base's classmethod."""

import abc


class BudgetedRollout(abc.ABC):
    @classmethod
    def add_arguments(cls, parser):
        parser.add_argument("--rollout-budget", type=int, default=None)

    @abc.abstractmethod
    def __call__(self, input): ...


class Rollout(BudgetedRollout):
    def __call__(self, input):
        return input


class Plain(abc.ABC):
    """Adds no flags: neither it nor its standard-library base has add_arguments."""

    @abc.abstractmethod
    def __call__(self, input): ...
