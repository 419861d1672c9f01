"""``--workers N`` and ``--scheduler ADDRESS``: a command's grid of cells on a Dask cluster.

Without either option the cells run one after the other in the command's own process and Dask
is not imported.  ``--workers N`` starts a local cluster of ``N`` worker processes (one thread
each) for the command and closes it after; ``--scheduler ADDRESS`` sends the cells to a running
cluster (``dask scheduler`` and ``dask worker ADDRESS`` on the machines, or dask-jobqueue on a
batch system; docs/performance.md).  Either way the cells' files are written by the command,
so the output and the checkpoint are those of the serial run.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["CONNECT_SECONDS", "add_cluster_arguments", "check_cluster", "cluster_client"]

CONNECT_SECONDS = 10
"""How long ``--scheduler`` waits for the scheduler to answer."""


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workers N`` or ``--scheduler ADDRESS`` (not both)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="compute the cells on a local Dask cluster of N worker processes (default: one "
        "after the other in this process, without Dask)",
    )
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="compute the cells on a running Dask cluster, e.g. tcp://10.0.0.5:8786 (started "
        "with `dask scheduler` and `dask worker ADDRESS`, or dask-jobqueue)",
    )


def check_cluster(args: argparse.Namespace) -> None:
    """Refuse ``--workers`` below 1 before anything is imported.

    Raises:
        GradflowError: naming the value and the valid range.
    """
    if args.workers is not None and args.workers < 1:
        from gradflow import GradflowError

        raise GradflowError(f"--workers {args.workers} is outside the valid range [1, inf)")


@contextlib.contextmanager
def cluster_client(args: argparse.Namespace, command: str) -> Iterator[Any]:
    """The ``dask.distributed.Client`` the options ask for (``None`` without them), announced
    on stderr with its workers and the dashboard's address; a local cluster is closed after.

    Raises:
        GradflowError: no scheduler answered at ``--scheduler`` within :data:`CONNECT_SECONDS`.
    """
    if args.workers is None and args.scheduler is None:
        yield None
        return
    from distributed import Client, LocalCluster

    from gradflow import GradflowError

    with contextlib.ExitStack() as stack:
        if args.workers is not None:
            nanny = logging.getLogger("distributed.nanny")
            stack.callback(nanny.setLevel, nanny.level)
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=args.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                )
            )
            client = stack.enter_context(Client(cluster))
            # closing, the nannies warn of worker processes slow to exit (killed after 4 s, as
            # a process that has run JAX often is): not the user's concern once cells are written
            stack.callback(nanny.setLevel, logging.ERROR)
            where = f"a local Dask cluster of {args.workers} worker processes"
        else:
            try:
                client = stack.enter_context(Client(args.scheduler, timeout=CONNECT_SECONDS))
            except (OSError, TimeoutError, ValueError) as error:
                raise GradflowError(
                    f"--scheduler {args.scheduler}: no Dask scheduler answered within "
                    f"{CONNECT_SECONDS} s ({error})"
                ) from None
            workers = len(client.scheduler_info()["workers"])
            where = (
                f"the Dask cluster at {args.scheduler} ({workers} worker{'s' * (workers != 1)} now)"
            )
        print(
            f"gradflow {command}: cells on {where}; dashboard {client.dashboard_link}",
            file=sys.stderr,
            flush=True,
        )
        yield client
