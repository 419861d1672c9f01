"""How results leave the engine: atomic files with their metadata (``io``), plain-text tables
(``text``), drawing primitives (``draw``) and the streamlines they place as matplotlib's
``streamplot`` places them (``streamlines``), the picture of a sweep (``sweep_picture``),
progress bars (``progress``) and memory estimates
checked before a large computation (``memory``)."""
