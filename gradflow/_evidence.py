"""What backs a verdict of the engine: :class:`Evidence`, ``proven`` or ``numerical``, with a reason.

Every claim the engine reports — the kind of a critical set, that a list of critical sets is
complete, where a flow ended, the label of a grid point — carries one.  ``proven`` means a
mathematical argument the engine carried out (interval arithmetic: a Krawczyk box holding a
unique zero, the inertia of an interval Hessian; a proven lower bound; a level-set argument);
``numerical`` means floating-point computation that rounding or an unlucky choice of probes
could mislead.  The reason says which, in words a reader can check.  Every output writes it
the same way: ``"proven: <reason>"`` / ``"numerical: <reason>"`` in text, and
``{"evidence": "proven", "reason": "…"}`` in JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Evidence"]


@dataclass(frozen=True)
class Evidence:
    """The evidence behind one verdict.

    Attributes:
        proven: ``True`` where a proof backs the verdict, ``False`` where it is numerical.
        reason: what was proven or computed, one line (no trailing full stop).
    """

    proven: bool
    reason: str

    @classmethod
    def of_proof(cls, reason: str) -> Evidence:
        """Proven evidence: ``reason`` names the argument."""
        return cls(True, reason)

    @classmethod
    def numerical(cls, reason: str) -> Evidence:
        """Numerical evidence: ``reason`` names the computation."""
        return cls(False, reason)

    @property
    def word(self) -> str:
        """``"proven"`` or ``"numerical"``."""
        return "proven" if self.proven else "numerical"

    def __str__(self) -> str:
        return f"{self.word}: {self.reason}"

    def metadata(self) -> dict[str, Any]:
        """JSON-ready: ``{"evidence": "proven" | "numerical", "reason": …}``."""
        return {"evidence": self.word, "reason": self.reason}
