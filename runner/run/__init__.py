"""run: the one step with side effects. Everything else in run-matrix is pure.

For each selected cell: requirements (unmet: skip) -> preflight -> prepare -> cluster ->
submit -> watch -> check -> result; ``session.run`` chains them, and ``lifecycle.run``
puts around them what must happen whatever ends a run (dead runs cleaned up, this run
recorded, reports rewritten after every cell, what a fault left stopped). Ray is imported only
inside ``cluster`` and ``job``, so ``run --dry-run`` and the other commands never load it.

Glossary: a **plan** is a cell with its rendered launch and how to reproduce it; an
**attempt** is one job submission (infrastructure failures may be retried, test failures
never); a **local head** is a Ray head this run started, in its own process session, and
the only Ray processes it ever stops; the **run record** (``record``) names everything a run
started while it lives, so that ``cleanup`` can stop what a run that died left behind;
the **outputs** (``outputs``) are the report files, checked before any work and rewritten
whole after every cell.
"""
