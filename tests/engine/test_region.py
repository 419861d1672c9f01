"""The region of a basin map, a portrait or a sweep: built once, checked once, the same grid on
every path."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import gradflow
from gradflow import GradflowError, Region

x, y, z = sp.symbols("x y z", real=True)
SLAB = gradflow.ReducedModel(
    "slab", (x, y, z), (x**2 - 1) ** 2 + y**2 + z**2, bounds={"x": (-2, 2), "y": (-1, 3)}
)
"""A double well in x with a third parameter z: the region's defaults come from its bounds."""


def test_defaults_come_from_the_landscape_and_every_point_is_on_the_slice() -> None:
    region = Region.of(SLAB.bind(), 5, fixed={"z": 0.25})
    assert region.plane == ("x", "y") and region.box == (-2.0, 2.0, -1.0, 3.0)
    assert region.grid == (5, 5) and region.fixed == {"z": 0.25}
    points = region.points()
    assert points.shape == (5, 5, 3)
    np.testing.assert_array_equal(points[0, :, 0], [-2.0, -1.0, 0.0, 1.0, 2.0])
    np.testing.assert_array_equal(points[:, 0, 1], [-1.0, 0.0, 1.0, 2.0, 3.0])
    assert np.all(points[..., 2] == 0.25)
    assert Region.of(SLAB.bind(), (3, 4)).fixed == {"z": 0.0}
    assert region.bounds() == {"x": (-2.0, 2.0), "y": (-1.0, 3.0)}
    assert region.metadata() == {
        "plane": ["x", "y"],
        "box": [-2.0, 2.0, -1.0, 3.0],
        "grid": [5, 5],
        "fixed": {"z": 0.25},
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"grid": 1}, "grid = 1 must be an integer ≥ 2"),
        ({"grid": (4, 2.5)}, "grid = 2.5 must be an integer ≥ 2"),
        ({"box": (1, -1, 0, 1)}, "box: x min 1 must be below x max -1, both finite"),
        ({"box": (0, 1, 0, np.inf)}, "box: y min 0 must be below y max inf, both finite"),
        ({"box": (-1e308, 1e308, 0, 1)}, "box: x from -1e+308 to 1e+308 is wider"),
        ({"plane": ("x", "x")}, "plane (x, x): the two axes must be different parameters"),
        ({"plane": ("x", "q")}, "unknown parameter 'q'; parameters are x, y, z"),
        ({"fixed": {"x": 1.0}}, "fixed x = 1.0: x is an axis of the plane; only z can be fixed"),
        ({"fixed": {"z": np.nan}}, "fixed z = nan must be a finite number"),
    ],
)
def test_bad_input_is_refused_in_one_line_naming_the_value(kwargs, message) -> None:
    with pytest.raises(GradflowError) as error:
        Region.of(SLAB.bind(), **({"grid": 3} | kwargs))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_search_box_of_a_region_is_its_box_and_the_other_ranges_widened_by_half() -> None:
    """SLAB declares x ∈ [-2, 2], y ∈ [-1, 3] and leaves z at the default [-3, 3].  On the box
    x ∈ [-2, 2], y ∈ [-1, 1] with z = 0.5 the search box widens each range by half its width
    on each side: x ∈ [-4, 4], y ∈ [-2, 2], z ∈ [-6, 6]; on the slice z is pinned at 0.5."""
    bound = SLAB.bind()
    region = Region.of(bound, 3, box=(-2, 2, -1, 1), fixed={"z": 0.5})
    np.testing.assert_array_equal(region.search_box(bound), [[-4, 4], [-2, 2], [-6, 6]])
    np.testing.assert_array_equal(
        region.search_box(bound, on_slice=True), [[-4, 4], [-2, 2], [0.5, 0.5]]
    )
    np.testing.assert_array_equal(bound.search_box(), [[-2, 2], [-1, 3], [-3, 3]])


def test_a_search_box_by_name_is_checked_as_a_region_box_is() -> None:
    """One check of a range: a search box by name and a region's box refuse ``lo ≥ hi`` in the
    same words; a box given to critical_sets as an array is checked for its shape."""
    bound = SLAB.bind()
    with pytest.raises(GradflowError, match="^box: x min 1 must be below x max -1, both finite$"):
        bound.search_box({"x": (1, -1)})
    with pytest.raises(GradflowError, match=r"^box of shape \(2, 2\): expected \(3, 2\)"):
        gradflow.critical_sets(bound, box=[(-1, 1), (-1, 1)])
    with pytest.raises(GradflowError, match="^box: y min 2 must be below y max 1, both finite$"):
        gradflow.critical_sets(bound, box=[(-1, 1), (2, 1), (0, 0)])


def test_a_portrait_is_drawn_on_its_region() -> None:
    bound = SLAB.bind()
    region = Region.of(bound, 3, box=(-2, 2, -1, 1), fixed={"z": 0.5})
    picture = gradflow.portrait(bound, region=region, show_basins=False)
    assert picture.region == region and picture.fixed == {"z": 0.5}
    other = Region(("x", "y"), ("x", "y"), (0, 1, 0, 1), (2, 2), {})
    with pytest.raises(GradflowError, match="region over parameters x, y; the landscape's are"):
        gradflow.basins(bound, region=other, progress=False)


def test_the_fate_map_starts_from_the_basin_maps_grid() -> None:
    """The full runs and the reduced basin map start from the same points: the grid is exactly
    symmetric where the box is, as :func:`gradflow.grid_axis` promises."""
    from gradflow.systems.markov.config import FateConfig

    config = FateConfig(p=0.5, q=0.8, grid=5, box=(-1.0, 1.0, 0.5, 1.5))
    region = config.region()
    assert region.plane == ("w", "e") and region.names == ("e", "w")
    np.testing.assert_array_equal(region.xs, -region.xs[::-1])
    with pytest.raises(GradflowError, match="box: w min 1 must be below w max -1"):
        FateConfig(p=0.5, q=0.8, box=(1.0, -1.0, 0.5, 1.5))
