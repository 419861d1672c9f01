"""Phase portraits (``portrait``), separatrices as the stable manifolds of saddles
(``separatrix``) and the saved runs drawn over a portrait (``overlay``)."""
