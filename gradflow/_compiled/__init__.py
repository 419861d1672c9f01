"""Compiled programs kept between processes: JAX's persistent compilation cache switched on by
``import gradflow`` in gradflow's cache folder, with its off switch (``cache``), and the store of
compiled executables of the engine's hot programs, loaded without tracing, lowering or
compiling (``store``).
"""
