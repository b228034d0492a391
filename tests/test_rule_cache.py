"""The on-disk cache of parsed rule files changes how fast a file is read, never what is read."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml

from inkling_compat.engine import rule_cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("INKLING_COMPAT_CACHE_DIR", str(folder))
    monkeypatch.delenv("INKLING_COMPAT_NO_CACHE", raising=False)
    rule_cache.clear()
    yield folder
    rule_cache.clear()


def _forbid_parsing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("parsed although the cache holds this text")

    monkeypatch.setattr(rule_cache.yaml, "load", refuse)


def test_second_process_reads_the_cache(cache_dir, tmp_path, monkeypatch):
    rule = tmp_path / "r.yaml"
    rule.write_text("id: r\nfixes: [a, b]\nn: 3\n", encoding="utf-8")
    first = rule_cache.parse_rule_yaml(rule)
    rule_cache._flush()  # what atexit does
    assert rule_cache.cache_file().is_file()
    rule_cache.clear()  # a new process: nothing in memory
    _forbid_parsing(monkeypatch)
    again = rule_cache.parse_rule_yaml(rule)
    assert again == first == {"id": "r", "fixes": ["a", "b"], "n": 3}
    again["fixes"].append("mutated")
    assert rule_cache.parse_rule_yaml(rule)["fixes"] == ["a", "b"]  # fresh objects every call


def test_an_edited_file_is_parsed_again(cache_dir, tmp_path):
    rule = tmp_path / "r.yaml"
    rule.write_text("n: 3\n", encoding="utf-8")
    assert rule_cache.parse_rule_yaml(rule) == {"n": 3}
    rule_cache._flush()
    rule_cache.clear()
    rule.write_text("n: 4\n", encoding="utf-8")  # same size, same inode, maybe same mtime
    assert rule_cache.parse_rule_yaml(rule) == {"n": 4}


def test_malformed_yaml_still_raises(cache_dir, tmp_path):
    rule = tmp_path / "bad.yaml"
    rule.write_text("a: [1\n", encoding="utf-8")
    with pytest.raises(yaml.YAMLError):
        rule_cache.parse_rule_yaml(rule)


def test_data_json_cannot_hold_is_never_cached(cache_dir, tmp_path):
    rule = tmp_path / "odd.yaml"
    rule.write_text("1: integer key\nwhen: 2024-01-02\n", encoding="utf-8")
    assert rule_cache.parse_rule_yaml(rule) == {1: "integer key", "when": dt.date(2024, 1, 2)}
    rule_cache._flush()
    rule_cache.clear()
    assert rule_cache.parse_rule_yaml(rule) == {1: "integer key", "when": dt.date(2024, 1, 2)}
    assert not rule_cache.cache_file().exists() or rule_cache.cache_file().read_text() == "{}"


def test_a_broken_cache_file_is_ignored(cache_dir, tmp_path):
    cache_dir.mkdir(parents=True)
    rule_cache.cache_file().write_text("{not json", encoding="utf-8")
    rule = tmp_path / "r.yaml"
    rule.write_text("n: 5\n", encoding="utf-8")
    assert rule_cache.parse_rule_yaml(rule) == {"n": 5}


def test_switched_off(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("INKLING_COMPAT_NO_CACHE", "1")
    rule = tmp_path / "r.yaml"
    rule.write_text("n: 6\n", encoding="utf-8")
    assert rule_cache.parse_rule_yaml(rule) == {"n": 6}
    rule_cache._flush()
    assert not rule_cache.cache_file().exists()


def test_bounded(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(rule_cache, "MAX_ENTRIES", 3)
    for i in range(5):
        (tmp_path / f"r{i}.yaml").write_text(f"n: {i}\n", encoding="utf-8")
        rule_cache.parse_rule_yaml(tmp_path / f"r{i}.yaml")
    rule_cache._flush()
    rule_cache.clear()
    rule_cache.parse_rule_yaml(tmp_path / "r0.yaml")  # one process uses one file
    rule_cache._dirty = True  # as after a miss
    rule_cache._flush()
    import json

    assert len(json.loads(rule_cache.cache_file().read_text())) == 1  # over the bound: only what was used
    rule_cache.clear()
    for i in range(5, 9):
        (tmp_path / f"r{i}.yaml").write_text(f"n: {i}\n", encoding="utf-8")
        rule_cache.parse_rule_yaml(tmp_path / f"r{i}.yaml")
    rule_cache._flush()
    assert len(json.loads(rule_cache.cache_file().read_text())) == 4  # only what this process used
