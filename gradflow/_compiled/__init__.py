"""Compiled programs kept between processes: JAX's persistent compilation cache switched on by
``import gradflow`` in gradflow's cache folder, with its off switch (``cache``), the store of
compiled executables of the engine's hot programs, loaded without tracing, lowering or
compiling (``store``), read ahead as a command that ran before starts (``read_ahead``), and
the files both keep in the cache folder (``files``).
"""
