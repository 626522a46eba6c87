"""The package's layout keeps its promises: no import cycles, modules of a readable size (or a
stated reason), and references only to files of the project."""

import ast
import re
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rmtk"
MAX_LINES = 600


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:``: imports for annotations only, never run."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def import_graph() -> nx.DiGraph:
    """Every import between rmtk modules that runs, at module level or inside functions
    (imports under ``if TYPE_CHECKING:`` serve annotations only and are left out)."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        skip = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - max(node.level - 1, 0)] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                targets = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in modules and t != name:
                    graph.add_edge(name, t)
    return graph


def test_no_import_cycles():
    def nested(a, b):  # a package and its own submodules import each other by design
        return a.startswith(b + ".") or b.startswith(a + ".")

    cycles = [c for c in nx.simple_cycles(import_graph()) if not any(nested(a, b) for a, b in zip(c, c[1:] + c[:1]))]
    assert cycles == [], "import cycles: " + "; ".join(" -> ".join(c + [c[0]]) for c in cycles)


def test_modules_are_small_or_say_why():
    for path in PACKAGE.rglob("*.py"):
        lines = path.read_text().count("\n")
        if lines > MAX_LINES:
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            assert "Size:" in doc, f"{path.relative_to(ROOT)} has {lines} lines and no 'Size:' reason in its docstring"


def test_references_name_files_of_the_project():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        for m in re.finditer(r"[\w/.-]*(design|benchmarks)\.md", text):
            assert m.group(0).startswith("docs/"), f"{path.relative_to(ROOT)}: {m.group(0)} is not a docs/ path"
        assert not re.search(r"\bissues?\b", text, flags=re.I), f"{path.relative_to(ROOT)} mentions an issue"
