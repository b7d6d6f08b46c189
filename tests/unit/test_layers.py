"""The layers of ARCHITECTURE.md, checked: who may import whom.

Every `import` in testbed/, analysis/ and results_contract/ is read with `ast`
(function-local imports too, since a late import is still a dependency), each
module is put in its layer, and an import that runs up, across to a sibling it
must not reach, or round in a cycle fails this test with the file, the line and
the rule. Changing the layering means changing LAYERS or ANALYSIS_LAYERS below
and ARCHITECTURE.md together.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.paths import ROOT

# Layer rank of each part of the `testbed` package (a package, or a subpackage of
# one: the longest name that holds the module); a module may import only parts of a
# lower rank, or its own part. Modules of testbed/ not named here (and not a stage's
# `cli`) are the bottom layer, rank 0.
STAGES = ("record", "replay", "emulate", "protocols", "measure")
LAYERS = {
    "testbed.host": 1,
    "testbed.formats": 2,
    **{f"testbed.{s}": 3 + i for i, s in enumerate(STAGES)},
    "testbed.validate": 10,
    # the campaign's four jobs, each a subpackage, and its runner above them
    "testbed.campaign.plan": 11,
    "testbed.campaign.store": 12,
    "testbed.campaign.run": 13,
    "testbed.campaign.cluster": 14,
    "testbed.campaign": 15,
    "testbed.commands": 16,
    "testbed.cli": 17,
}
CLI_RANK = 17
"""`testbed/<part>/cli.py` is the command line of its part: the top layer."""
LAZY_TABLES = {"testbed.cli": "COMMANDS"}
"""Modules whose "module:attribute" table of commands is imported on use;
its targets count as imports of that module."""
TOPS = ("testbed", "analysis", "results_contract")
CONTRACT = "results_contract"
"""The results contract: the bottom of both testbed and analysis, importing neither."""
ANALYSIS_LAYERS = {
    "analysis.statistics": 1,
    "analysis.campaign": 2,
    "analysis.figures": 3,
    "analysis.report": 4,
    "analysis.synthetic": 5,
    "analysis": 6,
}
"""Rank of each part of `analysis` (a package, a loose module, or the package's own
__init__); a module may import only parts of a lower rank, its own part, or the
results contract. Loose modules not named here are rank 0."""
ANALYSIS_USERS = 11
"""Layers of testbed from this rank up (the campaign's, the commands) may use analysis;
every layer may use the results contract."""
TOP_LEVEL_ANALYSIS_MODULES = 8
"""At most this many loose modules at the top of analysis/ (its __init__ included)."""
IMPORTLIB_ALLOWED = {"testbed.commands.groups", "testbed.measure.firefox_launcher"}
"""The lazy command group; and the Firefox launcher, a `python -I` script that loads
the Chromium launcher beside it by path (no folder of its own is on sys.path)."""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    file: Path
    line: int


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def part_of(module: str) -> str:
    """The layer key of a module: the contract, its package of testbed or analysis, or
    itself."""
    pieces = module.split(".")
    if pieces[0] == CONTRACT:
        return CONTRACT
    if pieces[0] == "analysis":
        key = ".".join(pieces[:2])
        return key if key in ANALYSIS_LAYERS else module
    for n in range(len(pieces), 1, -1):  # a subpackage's rank before its package's
        if ".".join(pieces[:n]) in LAYERS:
            return ".".join(pieces[:n])
    return module


def analysis_rank(module: str) -> int:
    return ANALYSIS_LAYERS.get(part_of(module), 0)


def rank(module: str) -> int:
    if module.split(".")[-1] == "cli":
        return CLI_RANK
    return LAYERS.get(part_of(module), 0)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, root: Path) -> list[Edge]:
    """Every module of testbed, analysis or the contract that the file imports, with its
    line."""
    module = module_name(path, root)
    tree = ast.parse(path.read_text(), filename=str(path))
    edges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            edges += [Edge(module, a.name, path, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, path.name == "__init__.py")
            edges.append(Edge(module, target, path, node.lineno))
            # `from testbed.host import proc` imports the module testbed.host.proc
            edges += [Edge(module, f"{target}.{a.name}", path, node.lineno) for a in node.names
                      if (root / Path(*f"{target}.{a.name}".split("."))).with_suffix(".py").exists()
                      or (root / Path(*f"{target}.{a.name}".split("."))).is_dir()]
        elif (isinstance(node, ast.Assign) and module in LAZY_TABLES
              and any(isinstance(t, ast.Name) and t.id == LAZY_TABLES[module] for t in node.targets)
              and isinstance(node.value, ast.Dict)):
            edges += [Edge(module, v.value.split(":")[0], path, v.lineno) for v in node.value.values
                      if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return [e for e in edges if e.target.split(".")[0] in (*TOPS, "importlib")]


def all_edges(root: Path) -> list[Edge]:
    edges = []
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            edges += imports(path, root)
    return edges


def violations(root: Path) -> list[str]:
    """Every import that breaks the layering, as "file:line: what"."""
    out = []
    graph: dict[str, set[str]] = {}
    for e in all_edges(root):
        where = f"{e.file.relative_to(root)}:{e.line}"
        src_top, dst_top = e.source.split(".")[0], e.target.split(".")[0]
        if dst_top == "importlib":
            if e.source not in IMPORTLIB_ALLOWED:
                out.append(f"{where}: {e.source} uses importlib (import what you need by name)")
            continue
        if e.source.startswith(f"{e.target}."):
            continue  # a module's own package (its __init__) is not a dependency
        graph.setdefault(e.source, set()).add(e.target)
        if src_top == CONTRACT:
            if dst_top != CONTRACT:
                out.append(f"{where}: {CONTRACT} imports {e.target} (the contract is the "
                           "bottom: it imports neither testbed nor analysis)")
            continue
        if dst_top == CONTRACT:
            continue  # every layer may use the contract
        if src_top == "analysis":
            if dst_top == "testbed":
                out.append(f"{where}: analysis imports {e.target} (analysis stands alone)")
            elif (part_of(e.source) != part_of(e.target)
                  and not analysis_rank(e.source) == analysis_rank(e.target) == 0
                  and analysis_rank(e.target) >= analysis_rank(e.source)):
                out.append(f"{where}: {e.source} (layer {analysis_rank(e.source)}) imports "
                           f"{e.target} (layer {analysis_rank(e.target)}): imports run down only")
            continue
        if dst_top == "analysis":
            if rank(e.source) < ANALYSIS_USERS:
                out.append(f"{where}: {e.source} (layer {rank(e.source)}) imports {e.target}: "
                           f"only layers from {ANALYSIS_USERS} (campaign, commands) use analysis")
            continue
        same_part = part_of(e.source) == part_of(e.target) and part_of(e.source) in LAYERS
        # within the bottom layer and within the command line any order goes
        # (the cycle check still applies)
        flat = rank(e.source) == rank(e.target) and rank(e.source) in (0, CLI_RANK)
        if not same_part and not flat and rank(e.target) >= rank(e.source):
            out.append(f"{where}: {e.source} (layer {rank(e.source)}) imports {e.target} "
                       f"(layer {rank(e.target)}): imports run down only")
    out += [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group) + [min(group)])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_code_keeps_its_layers():
    found = violations(ROOT)
    assert not found, "\n".join(found)


# The checker itself: each rule fails on a tree that breaks it.
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in TOPS:
        (tmp_path / d).mkdir(exist_ok=True)
        (tmp_path / d / "__init__.py").touch()
    return tmp_path


@pytest.mark.parametrize("files, expected", [
    ({"testbed/replay/__init__.py": "", "testbed/replay/env.py": "from testbed.measure import x\n",
      "testbed/measure/__init__.py": "", "testbed/measure/x.py": ""},
     "testbed.replay.env (layer 4) imports testbed.measure"),
    ({"testbed/host/__init__.py": "", "testbed/host/proc.py": "def f():\n    from testbed.campaign import runner\n",
      "testbed/campaign/__init__.py": "", "testbed/campaign/runner.py": ""},
     "testbed.host.proc (layer 1) imports testbed.campaign"),
    ({"testbed/campaign/__init__.py": "", "testbed/campaign/plan/plan.py": "import importlib\n"},
     "uses importlib"),
    ({"analysis/load.py": "from testbed.host import safefs\n", "testbed/host/safefs.py": ""},
     "analysis stands alone"),
    ({"results_contract/schema.py": "from analysis.statistics import stats\n",
      "analysis/statistics/__init__.py": "", "analysis/statistics/stats.py": ""},
     "results_contract imports analysis.statistics"),
    ({"results_contract/load.py": "from testbed import errors\n", "testbed/errors.py": ""},
     "results_contract imports testbed"),
    ({"analysis/statistics/__init__.py": "",
      "analysis/statistics/bbr.py": "from analysis.figures import plots\n",
      "analysis/figures/__init__.py": "", "analysis/figures/plots.py": ""},
     "analysis.statistics.bbr (layer 1) imports analysis.figures"),
    ({"analysis/report/__init__.py": "",
      "analysis/report/report.py": "from analysis.report import sections\n",
      "analysis/report/sections.py": "def f():\n    from analysis.report import report\n"},
     "import cycle: analysis.report.report -> analysis.report.sections -> analysis.report.report"),
    ({"testbed/measure/__init__.py": "",
      "testbed/measure/x.py": "from analysis.statistics import stats\n",
      "analysis/statistics/__init__.py": "", "analysis/statistics/stats.py": ""},
     "testbed.measure.x (layer 7) imports analysis.statistics"),
    ({"testbed/a.py": "from testbed import b\n", "testbed/b.py": "from testbed import a\n"},
     "import cycle: testbed.a -> testbed.b -> testbed.a"),
    ({"testbed/replay/__init__.py": "", "testbed/replay/env.py": "from ..protocols import apply\n",
      "testbed/protocols/__init__.py": "", "testbed/protocols/apply.py": ""},
     "testbed.replay.env (layer 4) imports testbed.protocols"),
    ({"testbed/cli.py": 'COMMANDS = {"x": "testbed.host.proc:f"}\n',
      "testbed/host/proc.py": "from testbed import cli\n"},
     "import cycle: testbed.cli -> testbed.host.proc -> testbed.cli"),
])
def test_each_rule_can_fail(tmp_path, files, expected):
    found = violations(_tree(tmp_path, files))
    assert any(expected in v for v in found), found


def test_allowed_imports_pass(tmp_path):
    root = _tree(tmp_path, {
        "testbed/host/__init__.py": "", "testbed/host/proc.py": "from testbed import errors\n",
        "testbed/errors.py": "", "testbed/commands/__init__.py": "",
        "testbed/replay/__init__.py": "", "testbed/replay/env.py": "from testbed.record import x\n",
        "testbed/record/__init__.py": "", "testbed/record/x.py": "from . import y\n",
        "testbed/record/y.py": "", "testbed/replay/cli.py": "from testbed.protocols import a\n",
        "testbed/protocols/__init__.py": "", "testbed/protocols/a.py": "",
        "testbed/commands/groups.py": "import importlib\n",
        "testbed/cli.py": 'COMMANDS = {"run": "testbed.campaign.cli:run"}\n',
        "testbed/campaign/__init__.py": "", "testbed/campaign/cli.py": "",
        "testbed/host/x.py": "from results_contract import schema\n",
        "results_contract/schema.py": "", "results_contract/load.py": "from . import schema\n",
        "testbed/campaign/plan/plan.py": "from analysis.statistics import stats\n",
        "analysis/statistics/__init__.py": "", "analysis/report/__init__.py": "",
        "analysis/statistics/stats.py": "from results_contract import load\n",
        "analysis/report/report.py": "from analysis.statistics.stats import f\n"})
    assert violations(root) == []


TOP_LEVEL_MODULES = 6
"""At most this many loose modules at the top of testbed/ (the rest live in packages)."""


def test_every_package_has_a_rank_and_says_what_it_owns():
    """Every package of testbed/ is ranked above, and its docstring says what it owns
    and what it may import, so a newcomer reads the layers from the code."""
    packages = sorted(p.parent for p in (ROOT / "testbed").glob("*/**/__init__.py"))
    assert packages
    names = {p: module_name(p / "__init__.py", ROOT) for p in packages}
    unranked = [n for n in names.values() if n not in LAYERS]
    assert not unranked, f"packages without a layer in LAYERS: {unranked}"
    for p in names:
        where = f"{p.relative_to(ROOT)}/__init__.py"
        doc = ast.get_docstring(ast.parse((p / "__init__.py").read_text())) or ""
        assert len(doc.split()) >= 15, f"{where}: a docstring saying what it owns"
        assert "may import" in doc.lower(), f"{where}: say what it may import"


def test_few_loose_modules_at_the_top():
    loose = sorted(p.name for p in (ROOT / "testbed").glob("*.py"))
    assert len(loose) <= TOP_LEVEL_MODULES, loose


def test_analysis_packages_are_ranked_and_few_modules_are_loose():
    packages = sorted(p.parent.name for p in (ROOT / "analysis").glob("*/__init__.py"))
    assert packages
    unranked = [p for p in packages if f"analysis.{p}" not in ANALYSIS_LAYERS]
    assert not unranked, f"packages of analysis/ without a layer in ANALYSIS_LAYERS: {unranked}"
    loose = sorted(p.name for p in (ROOT / "analysis").glob("*.py"))
    assert len(loose) <= TOP_LEVEL_ANALYSIS_MODULES, loose


@pytest.mark.parametrize("package", [
    *sorted(f"analysis/{p.parent.name}" for p in (ROOT / "analysis").glob("*/__init__.py")),
    CONTRACT, "testbed/campaign",
    *sorted(f"testbed/campaign/{p.parent.name}"
            for p in (ROOT / "testbed/campaign").glob("*/__init__.py"))])
def test_each_package_docstring_names_its_modules(package):
    """A newcomer finds every module of a package in its docstring, by name."""
    folder = ROOT / package
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    missing = [m for m in modules if f"`{m}`" not in doc]
    assert not missing, f"{package}/__init__.py: its docstring does not name {missing}"
