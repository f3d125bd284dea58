"""memory: what a cell needs of each GPU's memory, phase by phase, before any GPU is touched.

``estimate`` (the entry point) reads a cell's model shape (``model``), counts its parameters per GPU
as megatron-core shards them (``params``), and adds up what the actor (``actor``: Megatron's own
theoretical-memory formulas) and a rollout engine (``engine``, ``rollout``, ``kv``: SGLang's
sizing of its static memory and KV pool) hold in each phase miles goes through. Every term says
where its formula comes from and what it read (``terms``); a term whose inputs are unknown says
why instead of a number. Pure arithmetic: the rules P10-P12 judge it.
"""
