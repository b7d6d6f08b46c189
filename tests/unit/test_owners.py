"""Facts with one owner, checked by reading the source with `ast`: the names in a
trial's folder are spelled only in results_contract/trial_folder.py, HTML is written
only in the Jinja templates (analysis/report/templates/), and subprocesses run through
testbed/host/proc.py (SUBPROCESS_USERS: the few that need what it does not offer).
Commands are declared one way: click is imported only by the command modules
(`testbed/cli.py`, a package's `cli.py`, `testbed/commands/`) and, for
`click.echo` alone, by the two output modules (CLICK_OUTPUT).

A string literal (an f-string's literal parts too; docstrings are prose, not
code) that spells a trial file's name, or holds an HTML tag, anywhere else in
testbed/, analysis/, results_contract/ or corpus/ fails with the file and the line; the HTML rule
leaves out the pages that are the workload (WORKLOAD_PAGES).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.paths import ROOT

from results_contract import trial_folder

PACKAGES = ("testbed", "analysis", "results_contract", "corpus")
TRIAL_FOLDER_OWNER = Path("results_contract/trial_folder.py")
HTML_TAG = re.compile(r"<\s*/?\s*(html|head|body|div|span|table|thead|tbody|tr|td|th|p|a|"
                      r"img|ul|ol|li|h[1-6]|style|script|svg|figure|section|details|summary|"
                      r"pre|code|br|em|strong|b|i|small)(\s*/?>|\s[^<>]*?[\w-]+=)",
                      re.IGNORECASE)
"""An HTML element's start or end tag: `<p>`, `</td>`, `<br/>`, or a tag with an
attribute (`<div class=…`); `a <b` or `p < 0.05` is not one."""


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (module, class, function,
    and the attribute docstrings that follow an assignment)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)):
                found.add(id(stmt.value))
    return found


def literals(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a Python file but its docstrings, with its line."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in skip]


def sources(root: Path) -> list[Path]:
    return sorted(p for top in PACKAGES if (root / top).is_dir()
                  for p in (root / top).rglob("*.py"))


def trial_file_names(root: Path, names=trial_folder.KEPT) -> list[str]:
    """Where a trial file's name is written outside its owner, as "file:line: name"."""
    out = []
    for path in sources(root):
        rel = path.relative_to(root)
        if rel == TRIAL_FOLDER_OWNER:
            continue
        for line, text in literals(path):
            out += [f"{rel}:{line}: {name!r} (use results_contract.trial_folder)"
                    for name in names if name in text]
    return out


WORKLOAD_PAGES = {
    Path("corpus"): "the corpus's sites: web pages the browser under test loads",
    Path("testbed/commands/doctor.py"): "the one-line page the doctor's probe server serves",
    Path("testbed/validate/site.py"): "the page of the validation's download site",
}
"""Where HTML is the workload (content served to the browser under test), not a page
the testbed writes for people: left out of the rule."""


def html_outside_templates(root: Path) -> list[str]:
    """Where a Python file builds HTML (a literal holding a tag), as "file:line: tag"."""
    out = []
    for path in sources(root):
        rel = path.relative_to(root)
        if any(rel == w or w in rel.parents for w in WORKLOAD_PAGES):
            continue
        for line, text in literals(path):
            tag = HTML_TAG.search(text)
            if tag:
                out.append(f"{rel}:{line}: {tag.group(0)!r} "
                           "(HTML belongs in analysis/report/templates/)")
    return out


def test_trial_file_names_are_spelled_by_their_owner_only():
    found = trial_file_names(ROOT)
    assert not found, "\n".join(found)


def test_html_is_written_in_templates_only():
    found = html_outside_templates(ROOT)
    assert not found, "\n".join(found)


def test_the_owner_names_every_file_once():
    assert len(set(trial_folder.KEPT)) == len(trial_folder.KEPT)
    assert trial_folder.HAR in trial_folder.KEPT
    assert set(trial_folder.CAPTURES.values()) <= set(trial_folder.KEPT)


# The scans themselves: each fails on a tree that breaks its rule, and passes prose.
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


@pytest.mark.parametrize("source, line, name", [
    ('FILES = {"har": "browsertime.har.gz"}\n', 1, "browsertime.har.gz"),
    ('def f(out):\n    return out / "trials" / "x" / "video.mp4"\n', 2, "video.mp4"),
    ('def f(d):\n    return f"{d}/trial.json"\n', 2, "trial.json"),
])
def test_a_trial_file_name_outside_its_owner_fails(tmp_path, source, line, name):
    root = _tree(tmp_path, {"testbed/campaign/store/commit.py": source})
    assert trial_file_names(root) == [
        f"testbed/campaign/store/commit.py:{line}: {name!r} (use results_contract.trial_folder)"]


def test_trial_file_names_in_the_owner_and_in_docstrings_pass(tmp_path):
    root = _tree(tmp_path, {
        "results_contract/trial_folder.py": 'HAR = "browsertime.har.gz"\n',
        "results_contract/trialfiles.py": '"""Reads browsertime.har.gz."""\n'
                                  'def f():\n    """video.mp4 if kept."""\n'
                                  'X = 1\n"""trial.json: the row."""\n'})
    assert trial_file_names(root) == []


@pytest.mark.parametrize("source, line, tag", [
    ('CELL = f"<td>{1}</td>"\n', 1, "<td>"),
    ('def f(t):\n    return \'<div class="scroll">\' + t + "</div>"\n', 2, "<div class="),
    ('PAGE = "<!doctype html><html lang=en>"\n', 1, "<html lang="),
    ('P = "<p>"\n', 1, "<p>"),
])
def test_html_outside_the_templates_fails(tmp_path, source, line, tag):
    root = _tree(tmp_path, {"analysis/page.py": source})
    found = html_outside_templates(root)
    assert found and all(f.startswith(f"analysis/page.py:{line}: ") for f in found), found
    assert any(repr(tag) in f for f in found), found


def test_comparisons_and_prose_are_not_html(tmp_path):
    root = _tree(tmp_path, {"analysis/statistics/stats.py": (
        'A = "p < 0.05 and a <b"\n'
        '"""Renders a <table> in the template."""\n'
        'B = "x <= y; <3"\n')})
    assert html_outside_templates(root) == []


def test_workload_pages_are_left_out_and_nothing_else(tmp_path):
    root = _tree(tmp_path, {"corpus/site.py": 'PAGE = "<html><body>"\n',
                            "testbed/validate/site.py": 'P = "<p>x"\n',
                            "testbed/validate/verdict.py": 'P = "<p>x"\n'})
    assert [f.split(":")[0] for f in html_outside_templates(root)] == [
        "testbed/validate/verdict.py"]


SUBPROCESS_USERS = {
    Path("testbed/host/proc.py"): "the owner",
    Path("testbed/host/chromium.py"): "starts Chromium with its DevTools pipe fds (preexec_fn)",
    Path("testbed/emulate/phasegate.py"): "execs each Mahimahi shell keeping its fds open",
    Path("testbed/host/enter.py"): "the namespace entry point: a bind mount before anything runs",
    Path("testbed/measure/xvfb.py"): "Xvfb stays in the wrapper's process group, so the "
                                     "runner's stop of that group takes it along",
    Path("testbed/measure/firefox_launcher.py"): "a standalone script (python -I, standard "
                                                 "library only) run as the testbed user: certutil",
    Path("testbed/commands/trial.py"): "ffmpeg as the testbed user, as analysis.report.trial_page's "
                                      "Runner (a CompletedProcess of bytes)",
}
"""Who may import subprocess in testbed/: proc, and what proc does not offer."""


def subprocess_importers(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "testbed").rglob("*.py")):
        rel = path.relative_to(root)
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) else [])
            if "subprocess" in names and rel not in SUBPROCESS_USERS:
                out.append(f"{rel}:{node.lineno}: imports subprocess (use testbed.host.proc)")
    return out


def test_subprocesses_run_through_proc():
    found = subprocess_importers(ROOT)
    assert not found, "\n".join(found)


def test_a_raw_subprocess_is_found(tmp_path):
    root = _tree(tmp_path, {"testbed/measure/visual.py": "import subprocess\n",
                            "testbed/replay/cli.py": "from subprocess import run\n",
                            "testbed/host/proc.py": "import subprocess\n"})
    assert subprocess_importers(root) == [
        "testbed/measure/visual.py:1: imports subprocess (use testbed.host.proc)",
        "testbed/replay/cli.py:1: imports subprocess (use testbed.host.proc)"]


CLICK_OUTPUT = {
    Path("testbed/console.py"): "echo: a printed line, control sequences removed",
    Path("testbed/jsonout.py"): "echo: the one JSON document of standard output",
}
"""Modules below the command line that print through `click.echo` (and use nothing
else of click): what implementation modules print with."""


def is_command_module(rel: Path) -> bool:
    """`testbed/cli.py`, `testbed/<package>/cli.py`, or a module of `testbed/commands/`."""
    parts = rel.parts
    return (parts[0] == "testbed"
            and (parts[-1] == "cli.py" or parts[:2] == ("testbed", "commands")))


def click_users(root: Path) -> list[str]:
    """Where click is imported, or used for more than `echo`, outside the command
    modules, as "file:line: what"."""
    out = []
    for path in sources(root):
        rel = path.relative_to(root)
        if is_command_module(rel):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if not any(n == "click" or n.startswith("click.") for n in names):
                continue
            if rel in CLICK_OUTPUT and isinstance(node, ast.Import) and names == ["click"]:
                continue
            out.append(f"{rel}:{node.lineno}: imports click (declare commands in a cli.py "
                       "or testbed/commands/)")
        if rel in CLICK_OUTPUT:
            out += [f"{rel}:{node.lineno}: click.{node.attr} (only click.echo here)"
                    for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "click" and node.attr != "echo"]
    return out


def test_commands_are_declared_in_command_modules_only():
    found = click_users(ROOT)
    assert not found, "\n".join(found)


def test_click_outside_the_command_modules_is_found(tmp_path):
    root = _tree(tmp_path, {
        "testbed/validate/network.py": "import click\n",
        "testbed/host/cleanup.py": "from click import command\n",
        "analysis/report/report.py": "import click.testing\n",
        "testbed/console.py": "import click\nclick.echo('x')\nclick.style('x')\n",
        "testbed/jsonout.py": "import click\nclick.echo('{}')\n",
        "testbed/validate/cli.py": "import click\n",
        "testbed/cli.py": "import click\n",
        "testbed/commands/cleanup.py": "import click\n",
        "corpus/site.py": "CLICK = 'click'\n"})
    why = "imports click (declare commands in a cli.py or testbed/commands/)"
    assert click_users(root) == [
        f"analysis/report/report.py:1: {why}",
        "testbed/console.py:3: click.style (only click.echo here)",
        f"testbed/host/cleanup.py:1: {why}",
        f"testbed/validate/network.py:1: {why}"]
