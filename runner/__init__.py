"""run-matrix: declarative test matrices for miles end-to-end tests across hardware.

The pipeline, one package a stage (``runner.pipeline`` chains the first three)::

    spec (load, compose, resolve, model) -> cells (expand, build) -> check -> launch (render)
        -> run -> results (report, history)

The commands' features (``importer``, ``port``, ``upgrade``, ``validate``, ``ci``, ``diff``,
``changed``) sit above the stages, ``cli`` above them all; docs/development.md has the
layers, and ``tests/test_layers.py`` keeps every import pointing down them.

Glossary
--------
spec
    One YAML file; it may ``extends:`` others.
base
    A spec meant to be extended (``matrices/base/``).
overlay
    A spec that extends another and changes it; ``why:`` says why, ``why_not:`` why not.
hardware profile
    Facts about one kind of machine (``matrices/hardware/<name>.yaml``); rules read only these.
model preset
    miles' MODEL_ARGS of one Megatron model type, as data (``miles/models/<type>.yaml``).
resolved spec
    The ``extends:`` chain merged, then every ``${...}`` evaluated.
provenance
    For every key, the chain of (file, line, operation, reason) that produced its value.
matrix, cell
    Axes in a spec expand it into cells; each cell has a stable id
    (``rocm/glm5-async[fp8_rollout=true]``) and a content hash.
problem
    One finding of validation: severity, rule id, message, dotted key, file:line.
launch
    The rendered commands of one cell: prepare steps, Ray head, services (miles' before-submit
    hook, or a hook the test defines), job submission, then the checks of its output.
own function
    A function a test of the checkout defines, named ``PATH.py:function`` (the path relative to
    the checkout's root): a check (``verify:``) or a hook (``launch.before_submit``).
read at launch
    A flag value read, when the cell launches, from a file an earlier cell of the spec wrote
    (``$${read-integer:PATH}``).
hook state
    An attribute of what a ``launch.before_submit`` hook returned, reported once the job has ended
    (after its ``stop:``) and given to a verify argument (``$${hook:FUNCTION.ATTRIBUTE}``).
prepared result
    What a prepare step of kind ``call`` returned (a path, as text), put into a flag's value when the
    job is submitted (``$${prepared:FUNCTION}``, anywhere in the flag's text).
result
    The outcome of running one cell: status, metrics, checks, logs, timings.
"""

__version__ = "0.1.0"
