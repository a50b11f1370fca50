"""The one family rule (client/tasks/families.py) and the test-split rule (client/tasks/splits.py), on specs and sources
built here; the servers that declare their families are tested in tests/envs and tests/imported."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.client.wire.errors import RouteNotSupportedError, UnknownSplitError
from openenv_prime.client.tasks.families import (
    AUTO,
    NO_FAMILY,
    FamilyField,
    FamilyFieldError,
    choose_family_field,
    family_key,
    field_value,
)
from openenv_prime.client.tasks.splits import choose_split
from openenv_prime.client.tasks.tasklist import parse_task_list
from openenv_prime.client.tasks.tasks import TaskListSource, TaskSource, load_sampler_tasks

values = st.one_of(st.integers(), st.text(min_size=1), st.booleans(), st.floats(allow_nan=False))


@given(value=values, field=st.text(alphabet="abcxyz_", min_size=1, max_size=8))
def test_the_family_is_the_string_of_the_fields_value(value, field):
    assert family_key({field: value, "other": 1}, field) == str(value)
    assert family_key({field: value}, None) == NO_FAMILY


def test_dotted_paths_reach_into_mappings_and_attributes_and_a_dotted_key_wins():
    class Data:
        spec = {"tier": 3}
        info = None

    assert family_key({"info": {"level": 2}}, "info.level") == "2"
    assert family_key(Data(), "spec.tier") == "3"
    assert family_key({"a.b": "flat", "a": {"b": "nested"}}, "a.b") == "flat"
    assert field_value(Data(), "info.level") is None


@pytest.mark.parametrize("record", [{"tier": None, "id": 1}, {"id": 1}, {"tier": "", "id": 1}])
def test_a_task_without_its_family_is_an_error_naming_the_task_its_fields_and_the_setting(record):
    with pytest.raises(FamilyFieldError, match=r"task 7 has no family field 'tier'; its fields are \['id'.*\]: set --family-field to a field every task has, or to none"):
        family_key(record, "tier", task="task 7", setting="--family-field")


def test_the_field_is_the_users_then_the_servers_then_family_then_tier_then_none():
    both = [{"family": "a/1", "tier": 1}]
    assert choose_family_field("level", both, {"family_field": "family"}) == FamilyField("level", "set")
    assert choose_family_field(None, both, {"family_field": "family"}) == FamilyField(None, "set")
    assert choose_family_field(AUTO, both, {"name": "test", "family_field": "tier"}) == FamilyField("tier", "declared")
    assert choose_family_field(AUTO, both, {"name": "test", "family_field": None}) == FamilyField(None, "declared")
    assert choose_family_field(AUTO, both, {"name": "test"}) == FamilyField("family", "found")
    assert choose_family_field(AUTO, [{"x": 1}, {"tier": 0}]) == FamilyField("tier", "found")
    assert choose_family_field(AUTO, [{"question": "q", "answer": "a"}]) == FamilyField(None, "none")
    with pytest.raises(ValueError, match="declares family_field 3"):
        choose_family_field(AUTO, both, {"name": "test", "family_field": 3})


def test_notes_say_where_the_families_came_from_and_nothing_when_the_user_set_them():
    assert FamilyField("tier", "set").note("--family-field") is None
    assert FamilyField("family", "declared").note() == (
        "families: the tasks are grouped by their 'family' field, which the server names for this split (in /splits), "
        "for per-family accuracy and the curriculum; to group them by another task field, set family_field")
    assert FamilyField("tier", "found").note("--family-field") == (
        "families: the tasks are grouped by their 'tier' field, for per-family accuracy and the curriculum; to group "
        "them by another task field, set --family-field")
    assert "one group, 'all'" in FamilyField(None, "none").note()
    assert "one group, 'all'" in FamilyField(None, "declared").note()


def _source(lines: list[str]) -> TaskListSource:
    return TaskListSource(parse_task_list(lines, source="tasks.jsonl"), "env")


def test_tasks_found_with_a_conventional_field_that_some_lack_are_an_error_not_a_mixed_family():
    source = _source(['{"split": "test", "tier": 1, "reset": {}}', '{"split": "test", "reset": {}}'])
    with pytest.raises(FamilyFieldError, match=r"task 1 of split 'test' \(task list tasks.jsonl\) has no family field 'tier'"):
        load_sampler_tasks(source, "test")
    assert {t.key for t in load_sampler_tasks(source, "test", None)} == {NO_FAMILY}


class _Listed(TaskSource):
    kind, where, env_name = "task api", "http://server", "env"

    def __init__(self, splits):
        self._splits = splits

    def splits(self):
        if self._splits is None:
            raise RouteNotSupportedError("no list_splits")
        return self._splits

    def specs(self, split):
        return []

    def reset_kwargs(self, split, index):
        return {"split": split, "index": index}


@pytest.mark.parametrize(("listed", "chosen", "noted"), [
    (["train", "test", "eval"], "test", False),
    (["train", "eval", "validation"], "eval", True),
    (["validation", "train"], "validation", True),
    (None, "test", False),  # no list_splits: the server answers for itself
])
def test_the_test_split_is_the_first_of_test_eval_validation_listed(listed, chosen, noted):
    split = choose_split(_Listed(listed), None, setting="--split")
    assert split.name == chosen and (split.note is not None) == noted
    if noted:
        assert f"split {chosen!r}: the server lists no 'test' split" in split.note and "--split chooses another" in split.note


def test_a_split_the_server_lacks_names_the_splits_it_has():
    with pytest.raises(UnknownSplitError, match=r"task api http://server has no split 'dev'; set --split to one of \['train', 'eval'\]"):
        choose_split(_Listed(["train", "eval"]), "dev", setting="--split")
    with pytest.raises(UnknownSplitError, match=r"lists no test split \(none of test, eval, validation\).*\['train'\]: set environment.test_split"):
        choose_split(_Listed(["train"]), None, setting="environment.test_split")
    assert choose_split(_Listed(None), "dev", setting="--split").name == "dev"
