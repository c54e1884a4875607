"""Tests of dpriv.hilbert: grid and Hilbert index (docs/algorithms.md §2.2)."""

import numpy as np
import pytest
from hilbertcurve.hilbertcurve import HilbertCurve
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.errors import InputError, PolicyError
from dpriv.hilbert import default_bits, grid_codes, grid_coords, hilbert_index


def reference(coords: np.ndarray, bits: int) -> np.ndarray:
    """hilbertcurve 2.x on plain Python ints, as uint64."""
    m = coords.shape[1]
    ref = HilbertCurve(bits, m).distances_from_points(coords.tolist())
    return np.array(ref, dtype=np.uint64)


# ------------------------------------------------------------------------------------------
# hilbert_index: agreement with hilbertcurve
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bits", "m"),
    [(1, 1), (8, 1), (64, 1), (1, 2), (5, 3), (7, 2), (32, 2), (16, 4), (12, 5), (1, 64), (3, 7)],
)
def test_bit_identical_to_hilbertcurve(bits, m):
    rng = np.random.default_rng(1000 * bits + m)
    coords = rng.integers(0, 2**bits, size=(400, m), dtype=np.uint64)
    # force the corners of the cube, including all-max (top bits set)
    coords[0] = 0
    coords[1] = 2**bits - 1
    got = hilbert_index(coords, bits)
    assert got.dtype == np.uint64
    assert got.shape == (400,)
    np.testing.assert_array_equal(got, reference(coords, bits))


def test_top_bit_region_uint64():
    """bits * m = 64: distances >= 2**63 must come out exactly (no sign or float loss)."""
    bits, m = 16, 4
    rng = np.random.default_rng(7)
    coords = rng.integers(0, 2**bits, size=(2000, m), dtype=np.int64)
    got = hilbert_index(coords, bits)
    ref = reference(coords, bits)
    np.testing.assert_array_equal(got, ref)
    assert (got >= np.uint64(2**63)).sum() > 500  # about half of them live in the top half
    # the whole range [0, 2**64) is reachable: the end of the curve is 2**64 - 1
    ends = HilbertCurve(bits, m).point_from_distance(2**64 - 1)
    assert hilbert_index(np.array([ends], dtype=np.uint64), bits)[0] == np.uint64(2**64 - 1)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64])
def test_integer_dtypes(dtype):
    rng = np.random.default_rng(3)
    coords = rng.integers(0, 2**5, size=(100, 3)).astype(dtype)
    np.testing.assert_array_equal(hilbert_index(coords, 5), reference(coords, 5))


def test_non_contiguous_input():
    rng = np.random.default_rng(4)
    big = rng.integers(0, 2**6, size=(200, 6), dtype=np.int64)
    view = big[::2, ::2]  # strided, 3 columns
    np.testing.assert_array_equal(hilbert_index(view, 6), reference(view, 6))
    fortran = np.asfortranarray(big[:, :3])
    np.testing.assert_array_equal(hilbert_index(fortran, 6), reference(fortran, 6))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 8).flatmap(
        lambda m: st.tuples(st.just(m), st.integers(1, 64 // m)).flatmap(
            lambda mb: st.tuples(
                st.just(mb[1]),
                st.lists(
                    st.lists(st.integers(0, 2 ** mb[1] - 1), min_size=mb[0], max_size=mb[0]),
                    min_size=1,
                    max_size=20,
                ),
            )
        )
    )
)
def test_property_matches_hilbertcurve(case):
    bits, points = case
    coords = np.array(points, dtype=np.uint64)
    np.testing.assert_array_equal(hilbert_index(coords, bits), reference(coords, bits))


def test_order1_2d_hand_checked():
    # hilbertcurve's orientation for p=1, n=2: (0,0) -> (0,1) -> (1,1) -> (1,0)
    pts = np.array([[0, 0], [0, 1], [1, 1], [1, 0]])
    np.testing.assert_array_equal(hilbert_index(pts, 1), np.array([0, 1, 2, 3], np.uint64))
    assert HilbertCurve(1, 2).distances_from_points(pts.tolist()) == [0, 1, 2, 3]


def test_curve_is_a_bijection_with_unit_steps():
    """All 2**(bits*m) cells get distinct keys and consecutive keys are grid neighbours."""
    bits, m = 3, 3
    axes = np.meshgrid(*[np.arange(2**bits)] * m, indexing="ij")
    cells = np.stack([a.ravel() for a in axes], axis=1)
    keys = hilbert_index(cells, bits)
    assert np.array_equal(np.sort(keys), np.arange(2 ** (bits * m), dtype=np.uint64))
    ordered = cells[np.argsort(keys)]
    steps = np.abs(np.diff(ordered, axis=0)).sum(axis=1)
    assert (steps == 1).all()


def test_input_not_mutated():
    rng = np.random.default_rng(5)
    for dtype in (np.uint64, np.int64):
        coords = rng.integers(0, 2**10, size=(300, 4)).astype(dtype)
        before = coords.copy()
        hilbert_index(coords, 10)
        np.testing.assert_array_equal(coords, before)
        assert coords.dtype == before.dtype


def test_empty_input():
    out = hilbert_index(np.empty((0, 3), dtype=np.int64), 5)
    assert out.dtype == np.uint64
    assert out.shape == (0,)


def test_list_input_accepted():
    np.testing.assert_array_equal(hilbert_index([[0, 0], [1, 0]], 1), np.array([0, 3], dtype=np.uint64))


# ------------------------------------------------------------------------------------------
# hilbert_index: errors
# ------------------------------------------------------------------------------------------
def test_error_bits_times_m_too_large():
    with pytest.raises(InputError, match=r"bits \* m .* > 64.*at most 12"):
        hilbert_index(np.zeros((2, 5), dtype=np.int64), 13)


def test_error_bits_too_small():
    with pytest.raises(InputError, match="bits must be >= 1"):
        hilbert_index(np.zeros((2, 2), dtype=np.int64), 0)
    with pytest.raises(InputError, match="bits must be an integer"):
        hilbert_index(np.zeros((2, 2), dtype=np.int64), 2.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.bool_, object])
def test_error_non_integer_dtype(dtype):
    with pytest.raises(InputError, match="integer dtype.*grid_coords"):
        hilbert_index(np.zeros((2, 2), dtype=dtype), 3)


def test_error_negative():
    with pytest.raises(InputError, match="negative"):
        hilbert_index(np.array([[0, 1], [-1, 2]]), 3)


def test_error_too_large_value():
    with pytest.raises(InputError, match=r"8 >= 2\*\*bits = 8"):
        hilbert_index(np.array([[0, 1], [8, 2]], dtype=np.uint8), 3)
    # uint64 values beyond 2**63 are reported, not wrapped
    with pytest.raises(InputError, match=">= 2\\*\\*bits"):
        hilbert_index(np.array([[2**63]], dtype=np.uint64), 63)


@pytest.mark.parametrize("shape", [(5,), (2, 2, 2), ()])
def test_error_not_2d(shape):
    with pytest.raises(InputError, match="2-D"):
        hilbert_index(np.zeros(shape, dtype=np.int64), 3)


def test_error_no_column():
    with pytest.raises(InputError, match="no column"):
        hilbert_index(np.zeros((3, 0), dtype=np.int64), 3)


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        hilbert_index(np.zeros((2, 2)), 3)


# ------------------------------------------------------------------------------------------
# grid_coords / grid_codes
# ------------------------------------------------------------------------------------------
def test_grid_coords_hand_case():
    # domain [45, 74], bits 5: g = rint((v - 45) / 29 * 31)
    v = np.array([45.0, 74.0, 59.5, 52.0, 60.0])
    # 59.5: 14.5/29*31 = 15.5 -> 16 (half to even); 52: 7/29*31 = 7.48 -> 7;
    # 60: 15/29*31 = 16.03 -> 16
    got = grid_coords(v, 45, 74, 5)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, np.array([0, 31, 16, 7, 16], dtype=np.uint64))


def test_grid_coords_round_half_even():
    # domain [0, 62], bits 5: v/62*31 = v/2 -> halves at odd v
    got = grid_coords(np.array([1, 3, 5, 62]), 0, 62, 5)
    np.testing.assert_array_equal(got, np.array([0, 2, 2, 31], dtype=np.uint64))


def test_grid_coords_integer_values_and_range():
    v = np.arange(18, 48, dtype=np.int64)  # 30 ages
    g = grid_coords(v, 18, 47, 5)
    assert g[0] == 0 and g[-1] == 31
    assert (np.diff(g.astype(np.int64)) >= 1).all()  # 30 values on 32 cells stay distinct


def test_grid_coords_degenerate_domain():
    got = grid_coords(np.array([3.0, 3.0]), 3.0, 3.0, 8)
    np.testing.assert_array_equal(got, np.zeros(2, dtype=np.uint64))


def test_grid_coords_nan_refused():
    with pytest.raises(InputError, match="NaN"):
        grid_coords(np.array([50.0, np.nan]), 45, 74, 5)
    with pytest.raises(InputError, match="NaN"):  # also on a degenerate domain
        grid_coords(np.array([np.nan]), 1.0, 1.0, 5)


def test_grid_coords_out_of_domain():
    with pytest.raises(InputError, match=r"outside the domain \[45, 74\]"):
        grid_coords(np.array([44.9, 50.0]), 45, 74, 5)
    with pytest.raises(InputError, match=r"outside the domain \[45, 74\]"):
        grid_coords(np.array([np.inf]), 45, 74, 5)


def test_grid_coords_bad_arguments():
    with pytest.raises(PolicyError, match="low <= high"):
        grid_coords(np.array([1.0]), 5, 1, 5)
    with pytest.raises(PolicyError, match="finite"):
        grid_coords(np.array([1.0]), 0, np.inf, 5)
    with pytest.raises(InputError, match="bits must be in"):
        grid_coords(np.array([1.0]), 0, 2, 0)
    with pytest.raises(InputError, match="bits must be in"):
        grid_coords(np.array([1.0]), 0, 2, 53)
    with pytest.raises(InputError, match="1-D"):
        grid_coords(np.zeros((2, 2)), 0, 2, 5)
    with pytest.raises(InputError, match="numeric dtype"):
        grid_coords(np.array(["a"]), 0, 2, 5)


def test_grid_coords_max_bits_exact():
    g = grid_coords(np.array([0.0, 1.0, 1e-300]), 0.0, 1.0, 52)
    np.testing.assert_array_equal(g, np.array([0, 2**52 - 1, 0], dtype=np.uint64))


def test_grid_coords_not_mutated():
    v = np.array([45.0, 60.0, 74.0])
    before = v.copy()
    grid_coords(v, 45, 74, 5)
    np.testing.assert_array_equal(v, before)


def test_grid_codes():
    # 3 levels, bits 2: r/2*3 -> 0, 1.5 -> 2 (half to even), 3
    np.testing.assert_array_equal(grid_codes(np.array([0, 1, 2]), 3, 2), np.array([0, 2, 3], dtype=np.uint64))
    # 2 levels (gender), bits 5: ends of the axis
    np.testing.assert_array_equal(
        grid_codes(np.array([1, 0], dtype=np.int8), 2, 5), np.array([31, 0], dtype=np.uint64)
    )
    # single level -> 0
    np.testing.assert_array_equal(grid_codes(np.zeros(4, int), 1, 5), np.zeros(4, np.uint64))
    assert grid_codes(np.array([], dtype=np.int64), 3, 5).shape == (0,)


def test_grid_codes_errors():
    with pytest.raises(InputError, match="negative.*missing"):
        grid_codes(np.array([0, -1]), 3, 5)
    with pytest.raises(InputError, match="3 >= n_levels = 3"):
        grid_codes(np.array([0, 3]), 3, 5)
    with pytest.raises(InputError, match="integer ranks"):
        grid_codes(np.array([0.0, 1.0]), 3, 5)
    with pytest.raises(PolicyError, match="n_levels must be >= 1"):
        grid_codes(np.array([], dtype=np.int64), 0, 5)


def test_grid_then_index_pipeline():
    age = np.array([45.0, 74.0, 59.5])
    gender = np.array([0, 1, 1])
    coords = np.stack([grid_coords(age, 45, 74, 5), grid_codes(gender, 2, 5)], axis=1)
    np.testing.assert_array_equal(hilbert_index(coords, 5), reference(coords, 5))


# ------------------------------------------------------------------------------------------
# default_bits
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        ((30, 2, 30), 5),  # the paper's data
        ((1,), 1),  # max(1, ...)
        ((1, 1), 1),
        ((2,), 1),
        ((32,), 5),  # exact power of two
        ((33,), 6),
        ((2**20,), 16),  # cap at 16
        ((1000,) * 5, 10),
        ((2**16,) * 5, 12),  # floor(64 / 5) = 12
        ((100,) * 64, 1),  # floor(64 / 64) = 1
        ((np.int64(30), 2), 5),
    ],
)
def test_default_bits(sizes, expected):
    assert default_bits(sizes) == expected


def test_default_bits_errors():
    with pytest.raises(PolicyError, match="empty"):
        default_bits([])
    with pytest.raises(PolicyError, match=">= 1"):
        default_bits([0, 3])
    with pytest.raises(PolicyError, match=">= 1"):
        default_bits([2.5])
    with pytest.raises(PolicyError, match="at most 64"):
        default_bits([2] * 65)


def test_curve_import_stays_light(tmp_path):
    # the curve alone (bench_hilbert, a key kernel in a worker) does not pay for pandas/Dask:
    # dpriv.hilbert loads its keys module (pandas, the policy) only when one of its names is used
    import os
    import subprocess
    import sys
    from pathlib import Path

    import dpriv

    code = (
        "import sys; from dpriv.hilbert import hilbert_index; "
        "print(sorted(m for m in ('pandas', 'dask', 'dpriv.hilbert.keys') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(dpriv.__file__).parents[1])}  # this dpriv
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path, env=env
    )
    assert out.stdout.strip() == "[]"


def test_every_public_name_is_its_module_object():
    import dpriv.hilbert as h
    import dpriv.hilbert.curve as curve
    import dpriv.hilbert.keys as keys

    for name in h.__all__:
        home = curve if name in vars(curve) else keys
        assert getattr(h, name) is getattr(home, name), name
    with pytest.raises(AttributeError, match="no attribute 'hilbert_key'"):
        h.hilbert_key  # noqa: B018


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 99)), max_size=30),
    st.booleans(),
)
def test_key_ordered_is_the_stable_key_tie_sort(rows, presorted):
    """key_ordered gives sort_values' rows (ties of (key, tie) in input order) whether or not
    the frame was already in order; an ordered frame keeps its rows, with a fresh index."""
    import pandas as pd

    from dpriv.hilbert.keys import HKEY, TIE, key_ordered

    frame = pd.DataFrame(rows, columns=[HKEY, TIE, "row"]).astype({HKEY: "uint64", TIE: "uint64"})
    if presorted:
        frame = frame.sort_values([HKEY, TIE], kind="stable")
    frame.index = frame.index + 7  # an index that must not survive
    want = frame.sort_values([HKEY, TIE], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(key_ordered(frame), want)
