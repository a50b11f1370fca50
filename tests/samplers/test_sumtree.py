"""The sum tree agrees with a plain cumulative scan, for every set and draw."""

import bisect
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import SumTree

weights_st = st.lists(st.floats(0.0, 100.0), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(weights=weights_st, changes=st.lists(st.tuples(st.integers(0, 39), st.floats(0.0, 100.0)), max_size=20), us=st.lists(st.floats(0.0, 1.0, exclude_max=True), max_size=20))
def test_find_matches_a_linear_scan_after_any_sets(weights, changes, us):
    tree = SumTree(weights)
    for i, w in changes:
        i %= len(weights)
        weights[i] = w
        tree.set(i, w)
    rebuilt = SumTree(weights)
    assert tree.nodes == rebuilt.nodes  # updated and rebuilt trees are bit-for-bit the same
    if tree.total <= 0:
        return
    cumulative = list(itertools.accumulate(weights))
    for u in us:
        x = u * tree.total
        leaf = tree.find(x)
        assert weights[leaf] > 0
        expected = bisect.bisect_right(cumulative, x)
        if expected < len(weights) and weights[expected] > 0:
            # Rounding may move a draw that sits on a boundary to a neighbour, never further.
            assert abs(leaf - expected) <= 1 or cumulative[leaf] == cumulative[expected]


def test_top_of_the_range_never_lands_on_padding():
    tree = SumTree([1.0, 2.0, 3.0])  # padded to 4 leaves
    assert tree.find(tree.total) == 2
    assert tree.find(tree.total * (1 - 1e-16)) == 2
