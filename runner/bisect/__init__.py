"""bisect: the first miles commit that breaks a cell, with retries so that a flaky run cannot mislead it.

``search`` (pure) says which commit to try next and what attempts decide; ``attempt`` runs the cell at
one commit as ``run`` runs it; ``changes`` says what moved in the launch; ``bisection`` is the loop.
"""
