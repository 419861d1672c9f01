"""The reduced models and the full JAX models they come from (``gradflow.models``).

The reduced models the command line knows by name are listed in ``gradflow.cli``'s registry.
"""
