"""Phase portraits (``portrait``) and separatrices as the stable manifolds of saddles
(``separatrix``)."""
