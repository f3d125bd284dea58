"""knowledge: what run-matrix knows about miles, read from shipped data under ``miles/``.

``flags`` is the catalog of every flag each launched program accepts (miles, Megatron,
SGLang under miles' ``--sglang-`` prefix), per pinned miles version; ``launchers`` the training
entry points a spec may launch and what miles does under each. The checks and render ask this
package; none of them reads a checkout directly.
"""
