"""site: the results page a team looks at, as a static site (``run-matrix report --html DIR``).

``records`` reads the history store into values, ``facts`` (streaks, flakiness, failure kinds),
``parity`` (the coverage table with each cell's latest status) and ``budget`` (GPU-hours) are pure
functions of them, ``markup`` and ``chart`` write escaped HTML and SVG, ``pages`` lays out each
page, and ``build`` chains them into ``{file name: text}``. Nothing here serves, fetches or runs
a script: each page is plain HTML with its SVG inline, readable from ``file://``.

Glossary
--------
verdict
    What a run says of its cell: ``pass`` or ``fail``. A run that failed for an infra reason
    (the attempt's outcome ``infra``, ``timeout``, ``stopped`` or ``not-submitted``, the cell's
    status ``error``: exit 3, a preflight or prepare step, a timeout) gives none, nor does a
    skipped or interrupted one.
flip
    Two verdicts in a row of one cell, at one content hash, that differ (pass -> fail, fail -> pass).
flaky
    A cell with at least ``flips`` flips among the verdicts of its last ``window`` runs at the
    content hash of its newest run (default: 3 of 10).
streak
    The newest runs of a cell that failed in a row (gate, job or infra), and when the first of them ran.
"""
