"""`ratchet check --generated PKG` reads the allowlist module the project holds now, from
its file: a module of the same name imported earlier in the process (another checkout's,
or this one's before a gen) is never what the check is held to."""

from __future__ import annotations

from pathlib import Path

from configbags.migrate.settings import load_from_generated

MODULE = '''from typing import NamedTuple
class AllowEntry(NamedTuple):
    file: str
    function: str
    leaf: str
    reason: str
ROOTS = ({root!r},)
EXCLUDES = ()
RAW_ACCESSOR = "get_server_args"
RECORD_CLASS = "ServerArgs"
RECORD_ATTRIBUTES = ("tp_size",)
ACCESSORS = {{"tp_size": "cfg.parallel.tp_size"}}
ALLOWLIST = (AllowEntry({root!r} + "/a.py", "f", "tp_size", "baseline"),)
'''


def _project(folder: Path, root: str, *, src: bool = False) -> Path:
    package = (folder / "src" if src else folder) / "eng" / "cb"
    package.mkdir(parents=True)
    for init in (package.parent / "__init__.py", package / "__init__.py"):
        init.write_text("")
    (package / "ratchet_allowlist.py").write_text(MODULE.format(root=root))
    return folder


def test_each_project_is_held_to_its_own_allowlist(tmp_path: Path) -> None:
    first = load_from_generated(_project(tmp_path / "one", "engine_one"), "eng.cb")
    second = load_from_generated(_project(tmp_path / "two", "engine_two", src=True), "eng.cb")
    assert first.settings.roots == ("engine_one",)
    assert second.settings.roots == ("engine_two",)  # not the module imported first
    assert [e.file for e in second.allowlist] == ["engine_two/a.py"]


def test_a_regenerated_allowlist_is_read_again(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", "before")
    assert load_from_generated(project, "eng.cb").settings.roots == ("before",)
    (project / "eng" / "cb" / "ratchet_allowlist.py").write_text(MODULE.format(root="after"))
    assert load_from_generated(project, "eng.cb.ratchet_allowlist").settings.roots == ("after",)
