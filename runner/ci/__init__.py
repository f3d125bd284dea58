"""ci: the CI plan — cells to runner classes by hardware and GPUs, balanced by est_time.

``runners`` reads runners.yaml; ``estimate`` gives each cell its est_time (the history store's
recorded durations, else the spec's ``ci.est_time``, else its timeout, else a default);
``plan`` routes and balances (pure: data in, data out); ``present`` prints the GitHub Actions
matrix and the Markdown tables; ``shard`` reads back what one runner was given.

Glossary
--------
runner class
    A kind of runner in runners.yaml: label, hardware, GPUs each runner owns, how many exist.
shard
    The cells one runner of a class runs; numbered across the whole plan.
load
    The sum of a shard's est_time.
"""
