"""Programs of a batch of flows made ahead, in a second thread, while the caller computes what
the batch needs first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._landscape.base import Landscape
from .._landscape.metric import Metric
from .batched import prepare_rounds
from .flows import batch_flow
from .options import FlowOptions

__all__ = ["prepare_endpoints"]


def prepare_endpoints(
    landscape: Landscape,
    thetas0: Any,
    options: FlowOptions | Sequence[FlowOptions] | None = None,
    *,
    chunk_size: int = 4096,
    steps_per_round: int = 32,
    dtype: Any = np.float64,
    metric: str | Metric | None = None,
) -> None:
    """Load or compile, ahead, the program of the first rounds of :func:`gradflow.flow_endpoints` with
    the same arguments (:func:`gradflow._flow.batched.prepare_rounds`), e.g. in a second thread
    while the caller finds the critical sets that the integration's stop rule needs.

    Raises:
        GradflowError: as :func:`gradflow.flow_endpoints` for the same starts, options and metric.
    """
    y0, _, field, args, _, scaled = batch_flow(landscape, thetas0, options, metric)
    prepare_rounds(
        field,
        args,
        y0.shape,
        scaled[0],
        chunk_size=chunk_size,
        steps_per_round=steps_per_round,
        dtype=dtype,
    )
