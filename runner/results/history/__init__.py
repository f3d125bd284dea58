"""history: every run's metric series in a database, bands judged against the trusted baseline.

``store`` opens the database (SQLite by default, PostgreSQL for a team), creates and migrates its
schema, writes one attempt per transaction and answers the baseline query. ``gates`` is pure: a
band of ``expect:`` and a baseline in, one verdict per coordinate out (miles' ``register_ci_gate``
semantics). ``recorder`` is what ``run`` holds: it judges a cell, then records it. ``plot`` and
``view`` draw the runs of a cell for ``run-matrix history``.

Glossary
--------
coordinate
    One value a band judges: a metric at one step (``steps: all`` or a list), or its last value
    (``steps: last``, stored as step -1 whatever step it was).
identity
    What a run is: cell id, content hash, hardware, miles commit, run-matrix version.
trusted
    A run that passed, was recorded without ``--no-record`` and was not untrusted since; only
    trusted runs make baselines.
baseline
    The last N trusted runs (``baseline: {runs: N}``, default 10) that share ``match`` fields
    (default: content hash and hardware) with this one; its mean per coordinate is the reference.
inactive
    No trusted run has the coordinate yet: a cold start, reported, never a silent pass.
"""
