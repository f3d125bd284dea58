"""The history store's tables, and the migrations that bring a database to this version.

The version lives in the database (``rm_schema``). A database of an older version is migrated
in one transaction; one written by a newer run-matrix is refused and left as it is. Every table
is prefixed ``rm_``: a team's PostgreSQL database may hold other things.

A later version adds a function to ``MIGRATIONS`` that changes version N-1 into N with explicit
DDL (never ``create_all`` of the current tables, which would skip the change).
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from runner.errors import EnvironmentProblem

VERSION = 6

metadata = sa.MetaData()

schema_table = sa.Table("rm_schema", metadata, sa.Column("version", sa.Integer, nullable=False))

runs = sa.Table(
    "rm_runs",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),  # the order runs were recorded
    sa.Column("id", sa.String(32), nullable=False, unique=True),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("cell", sa.Text, nullable=False),
    sa.Column("spec", sa.Text, nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("hardware", sa.Text, nullable=False),
    sa.Column("miles_commit", sa.String(64), nullable=False),  # "" when the checkout is not a git one
    sa.Column("version", sa.String(32), nullable=False),  # run-matrix's
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("submission_id", sa.Text, nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),  # the attempt's: succeeded, failed, infra, ...
    sa.Column("status", sa.String(16), nullable=False),  # the cell's: passed, failed, ...
    sa.Column("trusted", sa.Boolean, nullable=False),
    sa.Column("note", sa.Text, nullable=False),  # why it is not trusted ("" when it is)
    # version 2: the cell's wall-clock seconds (prepare, every attempt, checks), on its last attempt's
    # row; NULL on a retried attempt and on runs recorded before version 2. `ci plan` reads it.
    sa.Column("seconds", sa.Double, nullable=True),
    # version 4: the name the launch's $${run-id} got in this attempt (its --save folder, ...); "" when
    # no flag names the run, and on runs recorded before version 4
    sa.Column("launch_run_id", sa.Text, nullable=False, server_default=""),
    # version 5: the software stack the run ran on (container image, SGLang and Megatron versions, as the
    # job printed them or the hardware profile's stack states); "" when unknown and on runs before it
    sa.Column("stack", sa.Text, nullable=False, server_default=""),
    # version 6: the bisection this attempt was part of ("" for a run's) and what it told the bisection
    # (pass, fail, env; on the cell's last attempt only, "" on a retried one)
    sa.Column("bisection", sa.String(32), nullable=False, server_default=""),
    sa.Column("bisect_outcome", sa.String(8), nullable=False, server_default=""),
    sa.Index("rm_runs_baseline", "content_hash", "hardware", "trusted", "seq"),
    sa.Index("rm_runs_cell", "cell", "seq"),
)

samples = sa.Table(
    "rm_samples",
    metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("rm_runs.seq", ondelete="CASCADE"), nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),  # step, rollout, perf, critic-step
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("value", sa.Double, nullable=True),  # NULL when not finite (then: nonfinite)
    sa.Column("nonfinite", sa.String(8), nullable=True),  # nan, inf, -inf
    sa.Column("last", sa.Boolean, nullable=False),  # the metric's last sample in the run
    sa.Index("rm_samples_run_metric", "run", "metric", "step", "value"),  # covers the baseline query
)
# steps: last reads only each series' last sample, whatever the series' length
sa.Index(
    "rm_samples_last",
    samples.c.run,
    samples.c.metric,
    samples.c.last,
    samples.c.value,
    sqlite_where=sa.text("last = 1"),
    postgresql_where=sa.text("last"),
)

gates = sa.Table(
    "rm_gates",
    metadata,
    sa.Column("run", sa.Integer, sa.ForeignKey("rm_runs.seq", ondelete="CASCADE"), nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("at_step", sa.Integer, nullable=True),
    sa.Column("value", sa.Double, nullable=True),
    sa.Column("reference", sa.Double, nullable=True),
    sa.Column("low", sa.Double, nullable=True),
    sa.Column("high", sa.Double, nullable=True),
    sa.Column("baseline_runs", sa.Integer, nullable=False),
    sa.Column("verdict", sa.String(16), nullable=False),
    sa.Column("enforce", sa.Boolean, nullable=False),
    sa.Index("rm_gates_run_metric", "run", "metric"),
)

# version 3: each series' last value again, keyed by the default baseline identity (content hash,
# hardware; both fixed for a run): a `steps: last` baseline then reads one range of this table per
# metric instead of probing rm_samples once per run and metric (a 100-run baseline of 10 metrics:
# 10 seeks, not 1,000)
last_values = sa.Table(
    "rm_last_values",
    metadata,
    sa.Column("content_hash", sa.String(64), primary_key=True),
    sa.Column("hardware", sa.Text, primary_key=True),
    sa.Column("metric", sa.Text, primary_key=True),
    sa.Column(
        "run",
        sa.Integer,
        sa.ForeignKey("rm_runs.seq", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("value", sa.Double, nullable=True),  # NULL when not finite, as in rm_samples
    sqlite_with_rowid=False,  # the rows are the key: one B-tree, ordered for the range
)

trust_events = sa.Table(
    "rm_trust_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run", sa.Integer, sa.ForeignKey("rm_runs.seq", ondelete="CASCADE"), nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("trusted", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
)


# version 6: each bisection, as `bisect` started it, so that `bisect --resume ID` goes on from its runs
bisections = sa.Table(
    "rm_bisections",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("cell", sa.Text, nullable=False),  # the cell as named (a cell id, or a spec's path)
    sa.Column("good", sa.String(64), nullable=False),  # object ids
    sa.Column("bad", sa.String(64), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),  # --retries
    sa.Column("max_runs", sa.Integer, nullable=True),
    sa.Column("metric", sa.Text, nullable=False),  # "" when every gate decides
)


def _create_version_1(connection: sa.Connection) -> None:
    metadata.create_all(connection, tables=[runs, samples, gates, trust_events])


def _add_seconds(connection: sa.Connection) -> None:
    # version 1 is created from today's tables, which have the column already
    if "seconds" not in {c["name"] for c in sa.inspect(connection).get_columns(runs.name)}:
        connection.execute(sa.text(f"ALTER TABLE {runs.name} ADD COLUMN seconds DOUBLE PRECISION"))


def _add_last_values(connection: sa.Connection) -> None:
    last_values.create(connection)
    chosen = sa.select(runs.c.content_hash, runs.c.hardware, samples.c.metric, samples.c.run, samples.c.value)
    chosen = chosen.join(runs, runs.c.seq == samples.c.run).where(samples.c.last == sa.true())
    columns = ["content_hash", "hardware", "metric", "run", "value"]
    connection.execute(sa.insert(last_values).from_select(columns, chosen))


def _add_launch_run_id(connection: sa.Connection) -> None:
    # version 1 is created from today's tables, which have the column already
    if "launch_run_id" not in {c["name"] for c in sa.inspect(connection).get_columns(runs.name)}:
        added = "ADD COLUMN launch_run_id TEXT NOT NULL DEFAULT ''"
        connection.execute(sa.text(f"ALTER TABLE {runs.name} {added}"))


def _add_stack(connection: sa.Connection) -> None:
    # version 1 is created from today's tables, which have the column already
    if "stack" not in {c["name"] for c in sa.inspect(connection).get_columns(runs.name)}:
        connection.execute(sa.text(f"ALTER TABLE {runs.name} ADD COLUMN stack TEXT NOT NULL DEFAULT ''"))


def _add_bisections(connection: sa.Connection) -> None:
    # version 1 is created from today's tables, which have the columns already
    present = {c["name"] for c in sa.inspect(connection).get_columns(runs.name)}
    for name, kind in (("bisection", "VARCHAR(32)"), ("bisect_outcome", "VARCHAR(8)")):
        if name not in present:
            connection.execute(
                sa.text(f"ALTER TABLE {runs.name} ADD COLUMN {name} {kind} NOT NULL DEFAULT ''")
            )
    bisections.create(connection, checkfirst=True)


MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {
    1: _create_version_1,
    2: _add_seconds,
    3: _add_last_values,
    4: _add_launch_run_id,
    5: _add_stack,
    6: _add_bisections,
}


def found_version(connection: sa.Connection) -> int:
    """The database's schema version; 0 for a database run-matrix never wrote."""
    if not sa.inspect(connection).has_table(schema_table.name):
        return 0
    return int(connection.execute(sa.select(sa.func.max(schema_table.c.version))).scalar() or 0)


def migrate(connection: sa.Connection, where: str) -> None:
    """Bring the database to ``VERSION`` inside the caller's (write) transaction."""
    found = found_version(connection)
    if found > VERSION:
        raise EnvironmentProblem(
            f"history store {where} has schema version {found}, written by a newer run-matrix; this one "
            f"knows version {VERSION} and leaves the store as it is: upgrade run-matrix"
        )
    if found == VERSION:
        return
    if found == 0:
        schema_table.create(connection, checkfirst=True)
    for version in range(found + 1, VERSION + 1):
        MIGRATIONS[version](connection)
    connection.execute(sa.delete(schema_table))
    connection.execute(sa.insert(schema_table).values(version=VERSION))
