"""`configbags init` in an engine's own project: scaffold, generate into the engine's
package, publish and read with types, as a new user would (every step a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "acme-engine"\nversion = "0.1"\n')
    (tmp_path / "acme_engine").mkdir()
    (tmp_path / "acme_engine" / "__init__.py").write_text("")
    return tmp_path


@pytest.mark.slow  # init, gen and mypy as processes
def test_init_gen_publish_and_a_typed_read(project: Path) -> None:
    init = run(project, str(BIN / "configbags"), "init")
    assert init.returncode == 0, init.stderr
    assert '[tool.configbags]\npackage = "acme_engine.config"' in (project / "pyproject.toml").read_text()
    gen = run(project, str(BIN / "configbags"), "gen")
    assert gen.returncode == 0, gen.stderr
    assert (project / "acme_engine" / "config" / "accessors.py").is_file()
    use = project / "use.py"
    use.write_text(
        "from acme_engine.config.accessors import get_parallel, get_schedule, publish\n"
        "from acme_engine.config.server_args import ServerArgs\n\n"
        "publish(ServerArgs.from_cli(['--tp-size', '2']), role='launcher')\n"
        "tp: int = get_parallel().tp_size\n"
        "cap: int | None = get_schedule().max_running_requests\n"
        "print(tp, cap)\n"
    )
    ran = run(project, sys.executable, "use.py")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["2", "None"]
    typed = run(project, sys.executable, "-m", "mypy", "--strict", "--no-incremental", "use.py", "acme_engine")
    assert typed.returncode == 0, typed.stdout
    wrong = project / "wrong.py"
    wrong.write_text("from acme_engine.config.accessors import get_parallel\n\nname: str = get_parallel().tp_size\n")
    refused = run(project, sys.executable, "-m", "mypy", "--strict", "--no-incremental", "wrong.py")
    assert refused.returncode == 1 and 'expression has type "int"' in refused.stdout
    # generated code is lint-clean where configbags is a third-party package
    lint = run(project, sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F,I,UP,B",
               "acme_engine/config")
    assert lint.returncode == 0, lint.stdout


def test_init_never_overwrites(project: Path) -> None:
    assert run(project, str(BIN / "configbags"), "init").returncode == 0
    again = run(project, str(BIN / "configbags"), "init")
    assert again.returncode == 2 and "already has [tool.configbags]" in again.stderr


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_init_takes_an_absolute_schema_path(project: Path, tmp_path_factory: pytest.TempPathFactory,
                                            where: str) -> None:
    """Inside the project it is recorded project-relative, as every path is; outside,
    absolute. Either way init finishes (it had written everything, then raised)."""
    schema = project / "cfg" / "schema" if where == "inside" else tmp_path_factory.mktemp("elsewhere") / "schema"
    done = run(project, str(BIN / "configbags"), "init", "--schema", str(schema))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and (schema / "roles.yaml").is_file()
    recorded = "cfg/schema" if where == "inside" else schema.as_posix()
    assert f'schema = "{recorded}"' in (project / "pyproject.toml").read_text()
    assert f"wrote {recorded}/" in done.stdout
    gen = run(project, str(BIN / "configbags"), "gen")
    assert gen.returncode == 0, gen.stderr


def test_init_needs_a_project(tmp_path: Path) -> None:
    lonely = run(tmp_path, str(BIN / "configbags"), "init")
    assert lonely.returncode == 2 and "no pyproject.toml" in lonely.stderr


def test_gen_out_inside_a_package_is_imported_by_its_dotted_name(tmp_path: Path) -> None:
    """No [tool.configbags]: `--out legacy_engine/config_bags` generates the package
    `legacy_engine.config_bags`, whose header, docstrings and accessors import by that name."""
    (tmp_path / "legacy_engine").mkdir()
    (tmp_path / "legacy_engine" / "__init__.py").write_text("")
    init = run(tmp_path, str(BIN / "configbags"), "init")  # no pyproject: scaffolds nothing
    assert init.returncode == 2
    schema = Path(__file__).resolve().parent / "cases" / "tiny" / "schema"
    gen = run(tmp_path, str(BIN / "configbags"), "gen", "--schema", str(schema), "--out", "legacy_engine/config_bags")
    assert gen.returncode == 0, gen.stderr
    assert "package legacy_engine.config_bags" in gen.stdout
    accessors = (tmp_path / "legacy_engine" / "config_bags" / "accessors.py").read_text()
    assert "--package legacy_engine.config_bags --out legacy_engine/config_bags" in accessors
    ran = run(tmp_path, sys.executable, "-c", "import legacy_engine.config_bags.accessors as a; print(a.__name__)")
    assert ran.returncode == 0 and ran.stdout.strip() == "legacy_engine.config_bags.accessors", ran.stderr
    stale = run(tmp_path, str(BIN / "configbags"), "gen", "--schema", str(schema), "--out",
                "legacy_engine/config_bags", "--check")
    assert stale.returncode == 0, stale.stderr


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["flat", "src"])
def test_a_fresh_project_is_green_from_a_subfolder(tmp_path: Path, layout: str) -> None:
    """The package is found on disk, not guessed from project.name; gen, the ratchet, a
    publish and a typed read all work from a subfolder of the project."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "acme-serving"\nversion = "0.1"\n')
    base = tmp_path / "src" if layout == "src" else tmp_path
    (base / "acmeserve" / "engine").mkdir(parents=True)
    (base / "acmeserve" / "__init__.py").write_text("")
    (base / "acmeserve" / "engine" / "__init__.py").write_text("def width() -> int:\n    return 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")  # not the project's package
    sub = tmp_path / "docs" / "deep"
    sub.mkdir(parents=True)
    configbags = str(BIN / "configbags")
    init = run(sub, configbags, "init")
    assert init.returncode == 0, init.stderr
    assert 'package = "acmeserve.config"' in (tmp_path / "pyproject.toml").read_text()
    gen = run(sub, configbags, "gen")
    assert gen.returncode == 0 and "warning" not in gen.stderr, gen.stderr
    assert (base / "acmeserve" / "config" / "accessors.py").is_file()
    assert not (tmp_path / "acme_serving").exists()
    check = run(sub, configbags, "ratchet", "check")
    assert check.returncode == 0, check.stdout + check.stderr
    use = sub / "use.py"
    use.write_text(
        "from acmeserve.config.accessors import get_parallel, publish\n"
        "from acmeserve.config.server_args import ServerArgs\n\n"
        "publish(ServerArgs.from_cli(['--tp-size', '2']), role='launcher')\n"
        "tp: int = get_parallel().tp_size\n"
        "print(tp)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(base), "MYPYPATH": str(base)}
    ran = subprocess.run([sys.executable, "use.py"], cwd=sub, env=env, capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0 and ran.stdout.split() == ["2"], ran.stderr
    typed = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "use.py"], cwd=sub,
                           env=env, capture_output=True, text=True, timeout=300)
    assert typed.returncode == 0, typed.stdout


def test_init_asks_for_the_package_rather_than_guessing(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "acme-serving"\nversion = "0.1"\n')
    none = run(tmp_path, str(BIN / "configbags"), "init")
    assert none.returncode == 2 and "found no package" in none.stderr and "--package" in none.stderr
    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    several = run(tmp_path, str(BIN / "configbags"), "init")
    assert several.returncode == 2 and "found several packages (alpha, beta)" in several.stderr
    typo = run(tmp_path, str(BIN / "configbags"), "init", "--package", "acme_serving.config")
    assert typo.returncode == 2 and "the project has no package 'acme_serving' (found: alpha, beta)" in typo.stderr
    assert not (tmp_path / "schema").exists()
    chosen = run(tmp_path, str(BIN / "configbags"), "init", "--package", "beta.config")
    assert chosen.returncode == 0, chosen.stderr


def test_gen_says_when_it_creates_a_package_folder_the_project_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from configbags.codegen.__main__ import main as gen_main

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "acme-serving"\nversion = "0.1"\n')
    (tmp_path / "acmeserve").mkdir()
    (tmp_path / "acmeserve" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    schema = Path(__file__).resolve().parent / "cases" / "tiny" / "schema"
    assert gen_main(["--schema", str(schema), "--package", "acme_serving.config"]) == 0
    assert "warning: creating acme_serving/, which the project did not have" in capsys.readouterr().err
    assert gen_main(["--schema", str(schema), "--package", "acmeserve.config"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_init_names_the_cache_folder_in_gitignore_once(tmp_path: Path) -> None:
    from configbags.codegen.scaffold import gitignore_text

    assert gitignore_text(tmp_path) == ".configbags-cache/\n"
    (tmp_path / ".gitignore").write_text("build/\n/.configbags-cache")  # the user's own spelling, no newline
    assert gitignore_text(tmp_path) is None  # never a second line
    (tmp_path / ".gitignore").write_text("*.pyc")
    assert gitignore_text(tmp_path) == "*.pyc\n.configbags-cache/\n"


def _untouched(project: Path, pyproject: bytes) -> None:
    assert not (project / "schema").exists() and (project / "pyproject.toml").read_bytes() == pyproject


@pytest.mark.parametrize("kind", ["folder", "link", "link-to-folder", "not-utf8"])
def test_init_refuses_a_gitignore_it_cannot_edit_in_place_and_writes_nothing(
        project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], kind: str) -> None:
    from configbags.codegen.scaffold import main as init_main

    outside = tmp_path_factory.mktemp("outside") / "precious.txt"
    outside.write_text("precious\n")
    gitignore = project / ".gitignore"
    if kind == "folder":
        gitignore.mkdir()
    elif kind == "link":
        gitignore.symlink_to(outside)
    elif kind == "link-to-folder":
        gitignore.symlink_to(outside.parent, target_is_directory=True)
    else:
        gitignore.write_bytes(b"build/\n\xff\n")
    before = (project / "pyproject.toml").read_bytes()
    monkeypatch.chdir(project)
    assert init_main([]) == 2
    err = capsys.readouterr().err
    assert ".gitignore" in err and "nothing was written" in err and "Traceback" not in err
    _untouched(project, before)
    assert outside.read_text() == "precious\n"


def test_init_undoes_its_writes_when_a_later_one_fails(
        project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.codegen.scaffold import main as init_main

    real = Path.write_text

    def failing(self: Path, *args: object, **kwargs: object) -> int:
        if self.name == ".gitignore":
            raise OSError(28, "No space left on device", str(self))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    before = (project / "pyproject.toml").read_bytes()
    monkeypatch.setattr(Path, "write_text", failing)
    monkeypatch.chdir(project)
    assert init_main([]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and ".gitignore" in err and "No space left" in err and "nothing was written" in err
    _untouched(project, before)


@pytest.mark.parametrize("package", ["../../x", "myeng.config;x", "acme_engine..config", ".acme_engine",
                                     "acme_engine.config.", "acme_engine.__init__", "acme_engine.class"])
def test_init_refuses_a_package_name_python_could_not_import_and_writes_nothing(
        project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], package: str) -> None:
    from configbags.codegen.scaffold import main as init_main

    before = (project / "pyproject.toml").read_bytes()
    monkeypatch.chdir(project)
    assert init_main(["--package", package]) == 2
    err = capsys.readouterr().err
    assert "is not an importable package name" in err and "nothing was written" in err and "Traceback" not in err
    _untouched(project, before)
    assert not (project / ".gitignore").exists()


def test_init_refuses_a_pyproject_that_is_not_utf8(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from configbags.codegen.scaffold import main as init_main

    (project / "pyproject.toml").write_bytes(b'[project]\nname = "\xff"\n')
    monkeypatch.chdir(project)
    assert init_main([]) == 2
    assert "is not UTF-8" in capsys.readouterr().err
    assert not (project / "schema").exists()


@pytest.mark.slow
def test_a_fresh_project_ignores_its_caches_and_holds_its_matrix(project: Path) -> None:
    (project / ".gitignore").write_text("dist/\n")
    sub = project / "acme_engine"  # every step from a subfolder
    configbags = str(BIN / "configbags")
    init = run(sub, configbags, "init")
    assert init.returncode == 0, init.stderr
    assert (project / ".gitignore").read_text() == "dist/\n.configbags-cache/\n"
    assert "configbags matrix --write" in init.stdout
    assert run(sub, configbags, "gen").returncode == 0
    assert run(sub, configbags, "ratchet", "check").returncode == 0
    assert (project / ".configbags-cache").is_dir()  # the folder .gitignore names is the one the tools use
    written = run(sub, configbags, "matrix", "--write")
    assert written.returncode == 0, written.stderr
    assert "(3 shapes," in written.stdout and (project / "schema" / "matrix.golden.jsonl").is_file()
    check = run(sub, configbags, "matrix", "--check")
    assert check.returncode == 0 and "resolution matches" in check.stderr, check.stdout + check.stderr
    cells = [json.loads(line) for line in (project / "schema" / "matrix.golden.jsonl").read_text().splitlines()]
    assert {"layer": "cli", "leaf": "tp_size", "shape": "tp2-lpm", "value": 2}.items() <= next(
        c for c in cells if c["shape"] == "tp2-lpm" and c["leaf"] == "tp_size").items()
