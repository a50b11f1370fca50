"""A peer selector from the learning simulator (`studies/worlds/peers2025.py`) as a sampler of this package's
interface, so a real training run can use it: ``make_peer_sampler("greso", pool, seed=0, group_size=8)``.

The rule is not written again here: the adapter drives the simulator's own peer object, so the real run trains with
the exact code the worlds suite measured. What the adapter adds is what a trainer needs and a simulation does not:
the package's pool, group accounting and metrics (`PooledSampler`), and a JSON state (the peer's attributes, its RNG
included) that a checkpoint saves and a resumed run continues exactly. Only the family-level rules are offered: in a
real run a question is drawn about once (e.g. 240 train tasks, 128 draws), so a per-question trace never forms and a
per-task rule is its uniform draw; SPEED-RL screens with extra rollouts, which a sampler cannot spend.

This is a part of the studies, not a package sampler: `openenv-prime train` does not offer it.
"""

from __future__ import annotations

from typing import Any, Iterable

from studies.worlds.peers import FAMILIES, Peer
from studies.worlds.peers2025 import BOTS, GRESO, SEC, MoPPS, _EpochOrder
from studies.worlds.worlds import Layout
from openenv_prime.samplers import Task, TaskPool
from openenv_prime.samplers.pooled import PooledSampler
from openenv_prime.samplers.rngstate import rng_from_json, rng_to_json
from openenv_prime.samplers.validation import check_count

PEERS: dict[str, type[Peer]] = {"greso": GRESO, "bots": BOTS, "mopps": MoPPS, "sec": SEC}
_NOT_STATE = ("layout", "rollout")  # given by the pool and the trainer, not saved


class PeerSampler(PooledSampler):
    """A family-level peer of the simulator behind the package's sampler interface: arms are the pool's keys."""

    def __init__(self, tasks: Iterable[Task] | TaskPool, peer: str = "greso", *, seed: int = 0, group_size: int = 8) -> None:
        if peer not in PEERS:
            raise ValueError(f"unknown peer {peer!r}; choose one of {sorted(PEERS)}")
        super().__init__(tasks, seed=seed)
        self.peer_name, self.group_size = peer, group_size
        self.peer = self._fresh_peer()

    def _fresh_peer(self) -> Peer:
        layout = Layout(family_of=tuple(self._key_of_task), members=self.pool.members)
        return PEERS[self.peer_name](layout, self.group_size, self.seed, level=FAMILIES)

    def sample(self, n: int) -> list[Task]:
        n = check_count(n)
        positions = self.peer.sample(n)
        for position in positions:
            self._draws[self._key_of_task[position]] += 1
        return [self.pool.tasks[position] for position in positions]

    def _learn(self, slot: int, rewards: tuple[float, ...], signal: bool, position: int | None) -> None:
        self.peer.learn(slot, rewards)  # family level: the arm is the key's slot

    def _config(self) -> dict[str, Any]:
        return {"seed": self.seed, "peer": self.peer_name, "level": FAMILIES, "group_size": self.group_size}

    def _export(self) -> dict[str, Any]:
        return {"peer": {name: _encode(value) for name, value in vars(self.peer).items() if name not in _NOT_STATE}}

    def _import(self, state: dict[str, Any]) -> dict[str, Any]:
        """A new peer holding the saved attributes; each must be one a fresh peer has, of the same kind."""
        saved = state.get("peer")
        peer = self._fresh_peer()
        expected = {name: value for name, value in vars(peer).items() if name not in _NOT_STATE}
        if not isinstance(saved, dict) or set(saved) != set(expected):
            shown = sorted(saved) if isinstance(saved, dict) else type(saved).__name__
            raise ValueError(f"state_dict field peer must hold the {self.peer_name} peer's attributes {sorted(expected)}, got {shown}")
        for name, fresh in expected.items():
            setattr(peer, name, _decode(saved[name], fresh, peer, f"peer.{name}"))
        return {"peer": peer}


def make_peer_sampler(name: str, tasks: Iterable[Task] | TaskPool, *, seed: int, group_size: int) -> PeerSampler:
    return PeerSampler(tasks, name, seed=seed, group_size=group_size)


def _encode(value: Any) -> Any:
    import random

    if isinstance(value, random.Random):
        return {"rng": rng_to_json(value)}
    if isinstance(value, _EpochOrder):  # its RNG is the peer's own, restored as that
        return {"epoch": {"n": value.n, "order": list(value.order), "at": value.at}}
    if isinstance(value, dict):
        return {"items": [[k, _encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot save a {type(value).__name__} in a peer's state")


def _decode(data: Any, fresh: Any, peer: Peer, name: str) -> Any:
    """``data`` (from ``_encode``) as the kind of value ``fresh`` is, or a ValueError naming the field."""
    import random

    def fail(what: str) -> ValueError:
        return ValueError(f"state_dict field {name} {what}")

    if isinstance(fresh, random.Random):
        if not isinstance(data, dict) or set(data) != {"rng"}:
            raise fail("must be {'rng': ...}")
        return rng_from_json(data["rng"])
    if isinstance(fresh, _EpochOrder):
        epoch = data.get("epoch") if isinstance(data, dict) else None
        if not isinstance(epoch, dict) or epoch.get("n") != fresh.n or not isinstance(epoch.get("order"), list):
            raise fail(f"must be {{'epoch': {{n: {fresh.n}, order, at}}}}")
        order, at = epoch["order"], epoch.get("at")
        if sorted(order) not in ([], list(range(fresh.n))) or not isinstance(at, int) or not 0 <= at <= len(order):
            raise fail("holds an order that is no shuffle of the tasks, or a position outside it")
        out = _EpochOrder(fresh.n, peer.rng)
        out.order, out.at = list(order), at
        return out
    if isinstance(fresh, dict):
        items = data.get("items") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, list) and len(i) == 2 for i in items):
            raise fail("must be {'items': [[key, value], ...]}")
        return {k: _plain(v, name) for k, v in items}
    if isinstance(fresh, list):
        if not isinstance(data, list) or len(data) != len(fresh):
            raise fail(f"must be a list of {len(fresh)}")
        return [_plain(v, name) for v in data]
    if isinstance(fresh, bool) or fresh is None or isinstance(fresh, str):
        if data != fresh:
            raise fail(f"is {data!r}; this peer has {fresh!r}")
        return data
    if isinstance(fresh, (int, float)):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise fail(f"holds {data!r}, not a number")
        return type(fresh)(data) if isinstance(fresh, float) else data
    raise fail(f"is of a kind the adapter does not restore ({type(fresh).__name__})")


def _plain(value: Any, name: str) -> Any:
    """A number, or a list of numbers (a dict's values, a list's items)."""
    if isinstance(value, list):
        return [_plain(v, name) for v in value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"state_dict field {name} holds {value!r}, not a number")
    return value
