"""Analyses that join a model with the engine (``gradflow.analysis``).

Each analysis is a function from a frozen configuration dataclass to a result dataclass (for
example :func:`gradflow.analysis.markov_training.train`); results that the command line writes
provide ``arrays()``, ``metadata()`` (their JSON record) and ``text()``.  Benchmarks
(``bench_*``) provide ``Config`` and ``bench(config)``.  Nothing here parses command lines.
"""
