"""Translation rules between platforms (miles/porting.yaml): when a source uses X and the target
lacks capability C, use Y, because R."""

from typing import Literal

from pydantic import Field

from schemas.values import EnvValue, Flags, Model


class PortRule(Model):
    id: str
    when: str = Field(
        description="expression over flag(NAME), env(NAME), source, target (profiles) and model (preset)"
    )
    set: Flags = Field(default={}, description="flags to set; a value may be ${target.supports...}")
    delete: list[str] = Field(default=[], description="flags to delete")
    set_env: dict[str, EnvValue] = {}
    delete_env: list[str] = []
    because: str = Field(description="the reason, written into the overlay's why:")


class ReviewEnv(Model):
    """Env vars no rule translates: the port leaves a TODO for a person."""

    names: list[str]
    when: str = Field(default="True", description="an expression as in rules")
    note: str


class RequirementRule(Model):
    """What a source's ``requires:``/``expect:`` entry becomes on the target (unmatched: carried)."""

    id: str
    section: Literal["requires", "expect"]
    when: str = Field(default="True", description="an expression as in rules")
    names: list[str] = Field(default=[], description="globs over entry names (expect: metric names)")
    mentions: list[str] = Field(
        default=[],
        description="words (may be ${source...}) that select an entry whose name, values or reason holds "
        "one (case-insensitive, as a whole word)",
    )
    action: Literal["drop", "todo"]
    because: str = Field(description="the overlay's why: for a drop, the TODO's note for a todo")


class Porting(Model):
    rules: list[PortRule]
    review_env: list[ReviewEnv] = []
    requirements: list[RequirementRule] = []
    after_refit: list[PortRule] = Field(
        default=[],
        description="rules evaluated on the re-fitted cell: what a re-fit makes pointless or wrong",
    )
    refit_flags: list[str] = Field(description="literal parallelism flags port may re-fit to fewer GPUs")
