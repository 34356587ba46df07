"""Issue 21's ratchet items: one base for every ratchet path, no exclude or resolution
path that silently matches nothing, the record's own module never baselined in silence,
and progress on a terminal only."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from configbags.migrate.cli import main
from configbags.migrate.importer import ROLES_YAML
from configbags.migrate.scan import ScanSettings, scan_tree
from configbags.runtime.cmdline import TerminalProgress

RECORD = "import dataclasses\n\n@dataclasses.dataclass\nclass ServerArgs:\n    tp_size: int = 1\n\n    def __post_init__(self):\n        self.tp_size = max(self.tp_size, 1)\n"
READER = "def f(server_args):\n    return server_args.tp_size\n"


def _engine(folder: Path) -> Path:
    (folder / "eng").mkdir(parents=True)
    (folder / "eng" / "server_args.py").write_text(RECORD)
    for i in range(5):
        (folder / "eng" / f"m{i}.py").write_text(READER)
    return folder / "eng"


def _schema(folder: Path) -> Path:
    schema = folder / "schema"
    (schema / "namespaces").mkdir(parents=True)
    (schema / "namespaces" / "parallel.yaml").write_text(
        "namespace: parallel\ndoc: d\nleaves:\n  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}\n"
    )
    (schema / "roles.yaml").write_text(ROLES_YAML)
    return schema


def test_a_schema_beside_the_engine_takes_every_path_from_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue: --root was taken from the working folder, --exclude from the project, so
    `--exclude .../server_args.py` matched nothing and the record module was baselined."""
    _engine(tmp_path)
    schema = _schema(tmp_path / "cfg")
    monkeypatch.chdir(tmp_path)  # a working folder that is not the project
    args = ["init", "--schema", "cfg/schema", "--root", "../eng", "--exclude", "../eng/server_args.py"]
    assert main(args) == 0
    data = yaml.safe_load((schema / "ratchet.yaml").read_text())
    engine = (tmp_path / "eng").resolve().as_posix()
    assert data["scan"]["roots"] == [engine]
    assert data["scan"]["excludes"] == [f"{engine}/server_args.py"]
    assert {e["file"] for e in data["allowlist"]} == {f"{engine}/m{i}.py" for i in range(5)}
    assert main(["check", "--schema", "cfg/schema"]) == 0
    capsys.readouterr()
    # a root given from the working folder is not found under the project, and says so
    assert main(["init", "--schema", "cfg/schema", "--root", "eng"]) == 2
    assert "relative to the project" in capsys.readouterr().err


def test_an_exclude_or_resolution_matching_nothing_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _engine(tmp_path)
    schema = _schema(tmp_path)
    root = ["init", "--schema", str(schema), "--root", "eng"]
    assert main([*root, "--exclude", "eng/no_such.py"]) == 2
    err = capsys.readouterr().err
    assert "'eng/no_such.py' matches no file" in err and "Nothing was written" in err
    assert not (schema / "ratchet.yaml").exists()
    assert main([*root, "--exclude", "eng/server_args.py", "--resolution", "eng/gone.py:adjust"]) == 2
    assert "'eng/gone.py:adjust' names eng/gone.py, which is not a scanned file" in capsys.readouterr().err
    assert main([*root, "--exclude", "eng/server_args.py"]) == 0
    # a ratchet.yaml edited by hand is held the same way by check
    text = (schema / "ratchet.yaml").read_text().replace("eng/server_args.py", "eng/server_arg.py")
    (schema / "ratchet.yaml").write_text(text)
    capsys.readouterr()
    assert main(["check", "--schema", str(schema), "--no-cache"]) == 1
    assert "scan.excludes pattern 'eng/server_arg.py' matches no file" in capsys.readouterr().out


def test_the_record_module_is_not_baselined_in_silence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _engine(tmp_path)
    schema = _schema(tmp_path)
    assert main(["init", "--schema", str(schema), "--root", "eng"]) == 0
    out = capsys.readouterr().out
    assert "warning: eng/server_args.py defines ServerArgs, the record itself: its raw reads (1) and writes (1)" in out
    assert "--exclude eng/server_args.py" in out
    assert main(["init", "--schema", str(schema), "--root", "eng", "--exclude", "eng/server_args.py"]) == 0
    assert "the record itself" not in capsys.readouterr().out


def test_progress_is_drawn_on_a_terminal_and_erased(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    seen: list[tuple[int, int]] = []
    scan_tree(tmp_path, ScanSettings(roots=(engine.name,)), progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (6, 6) and [d for d, _ in seen] == list(range(1, 7))
    stream = io.StringIO()
    progress = TerminalProgress(stream)
    progress(1, 3000)
    progress(2, 3000)  # within a tenth of a second: not redrawn
    progress(3000, 3000)
    assert stream.getvalue() == "\rratchet: parsed 1 of 3000 files\x1b[K\r\x1b[K"


def test_a_piped_check_prints_no_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _engine(tmp_path)
    schema = _schema(tmp_path)
    assert main(["init", "--schema", str(schema), "--root", "eng", "--exclude", "eng/server_args.py"]) == 0
    capsys.readouterr()
    assert main(["check", "--schema", str(schema), "--no-cache"]) == 0
    assert capsys.readouterr().err == ""  # capsys' stderr is no terminal, as a pipe is not


def test_init_on_an_engine_of_few_files_is_green_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's engine of three files: init writes the floor it saw (not the default 5),
    so `check` is green right after `init`; an existing floor is kept."""
    engine = _engine(tmp_path)
    for extra in ("m2.py", "m3.py", "m4.py"):
        (engine / extra).unlink()
    schema = _schema(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--schema", "schema", "--root", "eng", "--exclude", "eng/server_args.py"]) == 0
    assert yaml.safe_load((schema / "ratchet.yaml").read_text())["scan"]["min_files"] == 2
    assert main(["check", "--schema", "schema"]) == 0
    (engine / "m1.py").unlink()  # a scan that reads fewer files than init saw still fails, naming the floor
    capsys.readouterr()
    assert main(["check", "--schema", "schema"]) == 1
    assert "lower scan.min_files" in capsys.readouterr().out
