"""`ratchet fix --rewrite-writes` turns a write into a process-wide override only where
the written record is provably the process record: a held record needs
--rewrite-parameters, a record built here or copied is refused, and so is a leaf that a
function mutates and then restores (a draft's or a test's temporary change), always."""

from __future__ import annotations

import textwrap
from pathlib import Path

from configbags.migrate.fix import HELD_WRITE_REASON, Restore, Temporary, fix_tree, restores
from configbags.migrate.scan import ScanSettings

ACCESSORS = {"attention_backend": "cfg.kernel.attention_backend", "page_size": "cfg.schedule.page_size"}
POLICIES = {"attention_backend": "runtime", "page_size": "runtime", "chunked_prefill_size": "runtime"}
MODULE = "engine.config_bags.accessors"
SETTINGS = ScanSettings(roots=("engine",))


def _fix(tmp_path: Path, source: str, **options: bool) -> tuple[dict[int, str], list[int], str]:
    """(write line -> refusal, rewritten write lines, the file afterwards)."""
    path = tmp_path / "engine" / "mod.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    report = fix_tree(tmp_path, SETTINGS, ACCESSORS, MODULE, rewrite_writes=True, policies=POLICIES, **options)
    refused = {s.line: s.reason for s in report.skipped if s.write}
    return refused, [c.line for c in report.changed], path.read_text()


FETCHED = """\
    from engine.server_args import get_server_args


    def shrink_chunks() -> None:
        args = get_server_args()
        args.chunked_prefill_size = 1024
    """


def test_a_write_to_the_fetched_process_record_becomes_an_override(tmp_path: Path) -> None:
    refused, rewritten, text = _fix(tmp_path, FETCHED)
    assert (refused, rewritten) == ({}, [6])
    assert "    get_context().override('engine.mod:shrink_chunks', chunked_prefill_size=1024)\n" in text


HELD = """\
    from engine.server_args import ServerArgs


    def tune(server_args: ServerArgs) -> None:
        server_args.chunked_prefill_size = 1024


    class Runner:
        def __init__(self, server_args: ServerArgs) -> None:
            self.server_args = server_args

        def tune(self) -> None:
            self.server_args.chunked_prefill_size = 2048
    """


def test_a_write_to_a_held_record_needs_rewrite_parameters(tmp_path: Path) -> None:
    refused, rewritten, _ = _fix(tmp_path, HELD)
    assert refused == {5: HELD_WRITE_REASON, 13: HELD_WRITE_REASON} and not rewritten
    assert "--rewrite-parameters" in HELD_WRITE_REASON
    # the user vouches that the held record is the process record
    refused, rewritten, text = _fix(tmp_path, HELD, rewrite_parameters=True)
    assert (refused, rewritten) == ({}, [5, 13])
    assert "get_context().override('engine.mod:Runner.tune', chunked_prefill_size=2048)" in text


COPIES = """\
    import copy
    import dataclasses
    from copy import deepcopy

    from engine.server_args import ServerArgs, get_server_args


    def built() -> ServerArgs:
        record = ServerArgs(model_path="draft")
        record.chunked_prefill_size = 1
        return record


    def copied() -> ServerArgs:
        draft = copy.copy(get_server_args())
        draft.chunked_prefill_size = 2
        return draft


    def deep(server_args: ServerArgs) -> ServerArgs:
        draft = deepcopy(server_args)
        alias = draft
        alias.chunked_prefill_size = 3
        return draft


    def replaced() -> ServerArgs:
        draft = dataclasses.replace(get_server_args(), model_path="draft")
        draft.chunked_prefill_size = 4
        return draft


    class Draft:
        def __init__(self, server_args: ServerArgs) -> None:
            self.args = copy.deepcopy(server_args)

        def shrink(self) -> None:
            self.args.chunked_prefill_size = 5
    """


def test_a_write_to_a_record_built_or_copied_here_is_refused(tmp_path: Path) -> None:
    for options in ({}, {"rewrite_parameters": True}):  # never the process record: no flag helps
        refused, rewritten, text = _fix(tmp_path, COPIES, **options)
        assert not rewritten and "get_context" not in text
        assert refused[10].startswith("writes a record built here")
        assert refused[29].startswith("writes a copy of the record with fields changed")  # dataclasses.replace
        for line in (16, 23, 38):
            assert refused[line].startswith("writes a copy of the record (copy.copy, deepcopy)"), line
        assert "change the process config" in refused[16]


DRAFT = """\
    from engine.server_args import ServerArgs, get_server_args


    class DraftWorker:
        def __init__(self, server_args: ServerArgs) -> None:
            self.server_args = server_args

        def run(self) -> str:
            saved = self.server_args.attention_backend
            self.server_args.attention_backend = "triton"
            self.server_args.chunked_prefill_size = 512
            try:
                return self.step()
            finally:
                self.server_args.attention_backend = saved

        def step(self) -> str:
            return "ok"


    def with_getattr() -> None:
        args = get_server_args()
        old = getattr(args, "page_size")
        setattr(args, "page_size", 64)
        args.page_size = old


    class Scoped:
        def __enter__(self) -> None:
            self.old = get_server_args().page_size
            get_server_args().page_size = 16

        def __exit__(self, *exc: object) -> None:
            get_server_args().page_size = self.old
    """


def test_mutate_then_restore_is_always_refused(tmp_path: Path) -> None:
    refused, rewritten, text = _fix(tmp_path, DRAFT, rewrite_parameters=True)
    for line in (10, 15):
        assert refused[line].startswith(
            "mutate-then-restore in DraftWorker.run: `attention_backend` is saved (`saved = ...`, "
            "line 9) and written back from it (line 15)"
        ), refused[line]
        assert "process-wide override" in refused[line]
    # the same function's other write is a plain write of the (vouched-for) process record
    assert rewritten == [11]
    assert "get_context().override('engine.mod:DraftWorker.run', chunked_prefill_size=512)" in text
    # getattr/setattr spellings, and a self attribute saved in one method, restored in another
    assert refused[25].startswith("mutate-then-restore in with_getattr: `page_size` is saved (`old = ...`, line 23)")
    scoped = "`page_size` is saved (`self.old = ...`, line 30) and written back from it (line 34)"
    assert refused[31].startswith(f"mutate-then-restore in Scoped.__enter__: {scoped}")
    assert refused[34].startswith(f"mutate-then-restore in Scoped.__exit__: {scoped}")


def test_restores_are_found_by_syntax() -> None:
    found = restores(textwrap.dedent(DRAFT))
    assert sorted(found) == [10, 15, 24, 25, 31, 34]  # not the saves (9, 23, 30)
    assert {r.leaf for r in found.values()} == {"attention_backend", "page_size"}
    plain = "def f(rec):\n    rec.page_size = 4\n    n = rec.page_size\n    rec.page_size = n * 2\n"
    # no saved value is written back, but two writes of one leaf are refused all the same
    assert not [r for r in restores(plain).values() if isinstance(r, Restore)]
    assert sorted(restores(plain)) == [2, 4]


TEMPORARY = """\
    import contextlib

    from engine.accessors import cfg
    from engine.server_args import get_server_args


    @contextlib.contextmanager
    def smaller_batches():
        get_server_args().page_size = 8
        yield


    def dict_saved():
        saved = {"m": cfg.schedule.page_size}
        get_server_args().page_size = 8
        try:
            pass
        finally:
            get_server_args().page_size = saved["m"]


    def closure_restored():
        get_server_args().page_size = 8

        def undo():
            get_server_args().page_size = 1

        return undo


    def literal_in_finally():
        try:
            pass
        finally:
            get_server_args().page_size = 1
    """


def test_temporary_changes_without_a_saved_value_are_refused(tmp_path: Path) -> None:
    """Restored from a dict, in a closure, to a literal, or around a yield: the attacker's
    shapes that no `old = rec.x` shows are still not turned into process-wide overrides."""
    refused, rewritten, _ = _fix(tmp_path, TEMPORARY)
    assert rewritten == []
    assert refused[9].startswith("a temporary change in smaller_batches: `page_size` is written in a generator")
    assert refused[15].startswith("a temporary change in dict_saved: `page_size` is written 2 times (lines 15, 19)")
    assert refused[19] == refused[15]
    assert "written 2 times (lines 23, 26)" in refused[23] and refused[26].startswith(
        "a temporary change in closure_restored.undo: `page_size` is written"
    )
    assert refused[35].startswith("a temporary change in literal_in_finally: `page_size` is written in a finally block")
    assert all(isinstance(t, Temporary) for t in restores(textwrap.dedent(TEMPORARY)).values())
