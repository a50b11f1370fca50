"""A sum tree over non-negative weights: set one weight and draw proportionally, both in O(log K).

Each inner node is recomputed from its two children whenever a leaf below it changes, so node sums
never drift and a tree rebuilt from the same leaves is bit-for-bit the tree that was updated.
"""

from __future__ import annotations

from typing import Iterable


class SumTree:
    __slots__ = ("size", "count", "nodes")

    def __init__(self, weights: Iterable[float]) -> None:
        weights = list(weights)
        if not weights:
            raise ValueError("a SumTree needs at least one weight")
        size = 1
        while size < len(weights):
            size *= 2
        nodes = [0.0] * (2 * size)
        nodes[size : size + len(weights)] = [float(w) for w in weights]
        for j in range(size - 1, 0, -1):
            nodes[j] = nodes[2 * j] + nodes[2 * j + 1]
        self.size = size
        self.count = len(weights)
        self.nodes = nodes

    @property
    def total(self) -> float:
        return self.nodes[1]

    def __getitem__(self, i: int) -> float:
        return self.nodes[self.size + i]

    def set(self, i: int, weight: float) -> None:
        nodes = self.nodes
        j = self.size + i
        nodes[j] = weight
        j >>= 1
        while j:
            nodes[j] = nodes[2 * j] + nodes[2 * j + 1]
            j >>= 1

    def find(self, u: float) -> int:
        """The leaf whose cumulative range holds ``u`` (0 <= u < total); never a zero-weight leaf."""
        nodes = self.nodes
        size = self.size
        j = 1
        while j < size:
            j *= 2
            left = nodes[j]
            if u >= left and nodes[j + 1] > 0.0:
                u -= left
                j += 1
        return j - size
