"""Benchmarks (``gradflow.benchmarks``): each module provides a frozen ``Config`` and
``bench(config)``, which measures one job against a baseline run in the same process and prints
the ratios (``gradflow bench NAME``).  Nothing here parses command lines."""
