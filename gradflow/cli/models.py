"""``gradflow models``: every model the commands accept, with its parameters, hyperparameters
(and their ranges), whether it declares a full model (then ``gradflow fate --model NAME`` maps
where the full model's training ends) and its source, and the model families that are run by
commands of their own."""

from __future__ import annotations

import argparse

from gradflow.systems.model_specs import available, load_model

from ._options import add_json_argument, print_json

OWN_COMMANDS = {
    "statistical induction heads": "gradflow induction-heads",
    "shallow encoder NTK": "gradflow shallow-ntk",
    "two-mixture classification": "gradflow two-mixture",
}
"""The families that are not a registered model (no loss in a few scalars for ``--model``), by
the command that runs each."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    from gradflow import format_table, show_domain

    records = []
    for name, (factory, origin) in sorted(available().items()):
        model = load_model(name)
        records.append(
            {
                "name": name,
                "parameters": list(model.param_names),
                "hyperparameters": {
                    h.name: show_domain(model.domains[h]) for h in model.hyperparams
                },
                "full_model": model.full is not None,
                "factory": factory,
                "package": origin,
                "source": model.source,
            }
        )
    if args.json:
        print_json({"models": records, "own_commands": OWN_COMMANDS})
        return 0
    rows = [
        [
            r["name"],
            ", ".join(r["parameters"]),
            ", ".join(f"{k} ∈ {v}" for k, v in r["hyperparameters"].items()),
            "yes" if r["full_model"] else "",
            r["source"],
        ]
        for r in records
    ]
    print(format_table(["model", "parameters", "hyperparameters", "full model", "source"], rows))
    print("\nor: --model FILE.py:FACTORY, or --loss EXPR --params X,Y [--hyper NAME=VALUE …]")
    print("a model with a full model: gradflow fate --model NAME (or FILE.py:FACTORY)")
    print("run by commands of their own:")
    for family, command in OWN_COMMANDS.items():
        print(f"  {family}: {command}")
    return 0
