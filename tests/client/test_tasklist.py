"""The task-list format: splits, indices, specs and reset arguments, and errors that name file, line and field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.client.tasks.tasklist import TaskListError, parse_task_list, read_task_list


def _write(tmp_path, *lines: str):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_splits_indices_specs_and_reset_kwargs(tmp_path):
    path = _write(
        tmp_path,
        '{"split": "train", "id": "seed-3", "tier": 1, "reset": {"seed": 3}}',
        "",
        '{"tier": 2, "reset": {"seed": 4, "level": "hard"}}',
        '{"split": "eval", "reset": {}}',
        '{"split": "train", "id": 7, "reset": {"seed": 5}}',
    )
    tasks = read_task_list(path)
    assert tasks.splits() == ["train", "eval"]
    assert tasks.num_tasks("train") == 3
    assert tasks.specs("train") == [
        {"split": "train", "id": "seed-3", "tier": 1},
        {"split": "train", "id": "1", "tier": 2},
        {"split": "train", "id": 7},
    ]
    assert tasks.specs("eval") == [{"split": "eval", "id": "0"}]
    assert tasks.reset_kwargs("train", 1) == {"seed": 4, "level": "hard"}
    assert tasks.reset_kwargs("eval", 0) == {}
    assert tasks.spec("train", 2) == {"split": "train", "id": 7}


def test_returned_specs_and_kwargs_are_copies(tmp_path):
    tasks = read_task_list(_write(tmp_path, '{"reset": {"seed": 1, "opts": {"a": 1}}, "tier": 1}'))
    tasks.specs("train")[0]["tier"] = 99
    tasks.reset_kwargs("train", 0)["opts"]["a"] = 2
    assert tasks.specs("train")[0]["tier"] == 1
    assert tasks.reset_kwargs("train", 0) == {"seed": 1, "opts": {"a": 1}}


@pytest.mark.parametrize(
    "line, field, words",
    [
        ('{"tier": 1}', "reset", 'is missing; write "reset": {'),
        ('{"reset": [1, 2]}', "reset", 'write "reset": {'),
        ('{"reset": {}, "split": ""}', "split", '"split": "train"'),
        ('{"reset": {}, "split": 3}', "split", '"split": "train"'),
        ('{"reset": {}, "id": true}', "id", "string or an int"),
        ('{"reset": {}, "id": 1.5}', "id", "must be a string or an int, got 1.5"),
        ('{"reset": {}, "id": null}', "id", "string or an int"),
    ],
)
def test_bad_fields_name_file_line_field_and_the_fix(tmp_path, line, field, words):
    path = _write(tmp_path, '{"reset": {"seed": 0}}', line)
    with pytest.raises(TaskListError) as info:
        read_task_list(path)
    assert info.value.line == 2 and info.value.field == field
    text = str(info.value)
    assert str(path) in text and "line 2" in text and repr(field) in text and words in text


@pytest.mark.parametrize("line, words", [("{not json", "is not JSON"), ("[1, 2]", "not an object"), ('"seed"', "not an object")])
def test_lines_that_are_not_objects(tmp_path, line, words):
    with pytest.raises(TaskListError, match=rf"line 3: .*{words}"):
        read_task_list(_write(tmp_path, '{"reset": {}}', '{"reset": {}}', line))


def test_duplicate_ids_within_a_split_are_rejected_but_not_across_splits(tmp_path):
    ok = read_task_list(_write(tmp_path, '{"id": "a", "reset": {}}', '{"split": "eval", "id": "a", "reset": {}}'))
    assert [s["id"] for s in ok.specs("train")] == ["a"]
    # an explicit id equal to another task's default id (its index) collides too
    with pytest.raises(TaskListError, match=r"line 2, field 'id': id '0' is already used by line 1"):
        read_task_list(_write(tmp_path, '{"reset": {}}', '{"id": "0", "reset": {}}'))
    with pytest.raises(TaskListError, match=r"line 2, field 'id': id 1 is already used by line 1"):
        read_task_list(_write(tmp_path, '{"id": "1", "reset": {}}', '{"id": 1, "reset": {}}'))


def test_missing_empty_and_directory_paths(tmp_path):
    with pytest.raises(TaskListError, match="no such file"):
        read_task_list(tmp_path / "absent.jsonl")
    with pytest.raises(TaskListError, match="has no tasks"):
        read_task_list(_write(tmp_path, "", "  "))
    with pytest.raises(TaskListError, match="is a directory"):
        read_task_list(tmp_path)


def test_unknown_split_and_bad_index_say_what_exists(tmp_path):
    tasks = read_task_list(_write(tmp_path, '{"reset": {}}', '{"reset": {}}'))
    with pytest.raises(TaskListError, match=r"no split 'test'; its splits are \['train'\]"):
        tasks.specs("test")
    with pytest.raises(IndexError, match=r"valid indices are 0 .. 1"):
        tasks.reset_kwargs("train", 2)
    with pytest.raises(IndexError):
        tasks.reset_kwargs("train", -1)


_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4))
_records = st.fixed_dictionaries(
    {"reset": st.dictionaries(st.text(min_size=1, max_size=4), _json_scalars, max_size=3)},
    optional={"split": st.sampled_from(["train", "eval", "test"]), "tier": st.integers(0, 3)},
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_records, min_size=1, max_size=12))
def test_round_trip_preserves_order_index_and_reset(records):
    tasks = parse_task_list([json.dumps(r) for r in records], source="mem")
    seen: dict[str, int] = {}
    for record in records:
        split = record.get("split", "train")
        index = seen.get(split, 0)
        seen[split] = index + 1
        assert tasks.reset_kwargs(split, index) == record["reset"]
        spec = tasks.spec(split, index)
        assert spec == {**{k: v for k, v in record.items() if k != "reset"}, "split": split, "id": str(index)}
    assert tasks.splits() == list(dict.fromkeys(r.get("split", "train") for r in records))
    assert sum(tasks.num_tasks(s) for s in tasks.splits()) == len(records)
