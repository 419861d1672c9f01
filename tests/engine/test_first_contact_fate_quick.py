"""``gradflow fate --quick`` with a size option given says which wins, in one line.

``quick_config`` keeps every option the user gave and applies the quick settings to the rest,
so ``--grid 500 --quick`` is a 500 × 500 map: the command says so before it starts.
"""

from __future__ import annotations

from gradflow.cli.fate import _note_quick_kept
from gradflow.systems.fate import quick_config
from gradflow.systems.markov.config import FateConfig


def test_a_grid_given_with_quick_is_named_as_winning(capsys):
    given = FateConfig(p=0.5, q=0.8, grid=500)
    quick = quick_config(given)
    assert quick.grid == 500 and quick.seeds == FateConfig.QUICK["seeds"]
    _note_quick_kept(given, quick)
    err = capsys.readouterr().err.strip().split("\n")
    assert len(err) == 1 and "--quick: --grid 500 as given" in err[0]


def test_quick_alone_says_nothing(capsys):
    given = FateConfig(p=0.5, q=0.8)
    _note_quick_kept(given, quick_config(given))
    assert capsys.readouterr().err == ""
