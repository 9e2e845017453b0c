"""What ``--stubs-for`` asks of the machine around its work: where its scratch files go
(``scratch.py``) and how often the garbage collector walks the whole heap (``collector.py``)."""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import pytest

from tvmffi_gen.stubs import scratch
from tvmffi_gen.stubs.collector import FULL_EVERY, rare_full_collections


@pytest.fixture(autouse=True)
def fresh_choice() -> None:
    scratch._memory_folder.cache_clear()


def test_scratch_files_go_to_memory_when_linux_has_it_to_spare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(scratch, "MEMORY", str(tmp_path))  # a folder with the space needed
    with scratch.scratch_folder("tvmffi-gen-test-") as where:
        assert Path(where).is_dir() and Path(where).name.startswith("tvmffi-gen-test-")
        assert Path(where).parent == tmp_path
    assert not Path(where).exists()


def test_tmpdir_when_the_user_set_it_and_the_default_without_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR again
    with scratch.scratch_folder("x-") as where:
        assert Path(where).parent == tmp_path
    scratch._memory_folder.cache_clear()
    monkeypatch.delenv("TMPDIR")
    monkeypatch.setenv("TMP", str(tmp_path))  # another of tempfile's choices
    monkeypatch.setattr(scratch, "MEMORY", str(tmp_path / "memory"))
    (tmp_path / "memory").mkdir()
    assert scratch._memory_folder() is None
    scratch._memory_folder.cache_clear()
    monkeypatch.delenv("TMP")
    monkeypatch.setattr(scratch, "MEMORY", str(tmp_path / "no-such-folder"))
    assert scratch._memory_folder() is None
    monkeypatch.setattr(scratch, "MEMORY", str(tmp_path))
    monkeypatch.setattr(scratch, "NEEDED", 1 << 62)  # more than any disk has free
    scratch._memory_folder.cache_clear()
    assert scratch._memory_folder() is None


@pytest.mark.skipif(gc.get_threshold()[2] == 0, reason="an incremental collector: no third threshold to raise")
def test_full_collections_are_rare_within_and_as_they_were_after() -> None:
    before = gc.get_threshold()
    with rare_full_collections():
        young, middle, old = gc.get_threshold()
        assert (young, middle) == before[:2] and old == max(before[2], FULL_EVERY)
    assert gc.get_threshold() == before
    with pytest.raises(KeyError), rare_full_collections():
        raise KeyError("x")
    assert gc.get_threshold() == before
