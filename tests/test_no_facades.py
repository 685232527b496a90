"""One public import path per name: every name is imported from the module that defines it (issue 24: no
re-export facades). Checked on the source with ``ast``, nothing imported.

The rule, module side (every module under src/seqmix):

- ``__all__`` lists only names the module itself defines (a ``def``, a ``class``, an assignment);
- no import renames a name to itself (``import x as x``, ``from m import x as x``: the re-export idiom);
- no name imported from seqmix goes unused where it is imported (kept only so that others can import it
  there: the ``# noqa: F401`` re-export); importing a submodule (for its registration) binds no foreign name;
- no module-level ``y = mod.x`` hands on a name of another seqmix module.

The one exception: an op package's ``__init__`` (``seqmix/ops/<op>/__init__.py``) is its op's documented
public path (CONTRIBUTING.md, "Add a mixer", step 1: the dispatched function and its ``OP``), and may also
bind helpers of its own backend modules by assignment (``phi1 = reference.phi1``). Every other package
``__init__`` only defines (``seqmix.models.build_model``, a paper's ``ARTEFACTS``).

Importer side (src, tests, benchmarks, scripts, the Snakefile and workflow rules): ``from seqmix.m import x``
and ``M.x`` (M a module alias of ``seqmix.m``, x a seqmix name) name x where it is defined (or a submodule),
and a paper's
``lazy_artefacts`` map names each function in the module that defines it.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = "seqmix"
BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While)  # module-level statements whose bodies bind globals
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class Bindings:
    """The global names of one module: ``defined`` there, or ``imported``: name -> (module, name there)."""

    defined: set[str] = field(default_factory=set)
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)


def module_file(src: Path, dotted: str) -> Path | None:
    base = src.joinpath(*dotted.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return base.with_suffix(".py") if base.with_suffix(".py").is_file() else None


def module_of(src: Path, path: Path) -> tuple[str, bool]:
    """(dotted name, is a package) of a file under ``src``."""
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts), parts[-1] == "__init__"


def source_of(node: ast.ImportFrom, current: str | None, is_package: bool) -> str:
    """The absolute module a ``from ... import`` reads (relative imports resolved against ``current``; outside
    src, a relative import is the tests' own and reads no seqmix module)."""
    if not node.level:
        return node.module or ""
    if current is None:
        return ""
    pkg = current.split(".") if is_package else current.split(".")[:-1]
    return ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else []))


def top_level(body: list[ast.stmt]):
    """The statements that bind module globals: the body and the bodies of if/try/with/for blocks in it."""
    for node in body:
        yield node
        if isinstance(node, BLOCKS):
            for part in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, part, []):
                    yield from top_level([child] if isinstance(child, ast.stmt) else child.body)


@functools.cache
def bindings(src: Path, dotted: str) -> Bindings:
    path = module_file(src, dotted)
    out = Bindings()
    if path is None:
        return out
    is_package = path.name == "__init__.py"
    for node in top_level(ast.parse(path.read_text()).body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom):
            source = source_of(node, dotted, is_package)
            out.imported |= {a.asname or a.name: (source, a.name) for a in node.names}
        elif isinstance(node, ast.Import):
            for a in node.names:
                out.imported[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], "")
    return out


def is_module(src: Path, dotted: str) -> bool:
    return module_file(src, dotted) is not None


def handed_on(src: Path, module: str, name: str) -> str | None:
    """Where ``name`` is defined, when ``module`` only imports it (a second path to it); None otherwise."""
    if not module.startswith(PACKAGE) or is_module(src, f"{module}.{name}"):
        return None
    seen = bindings(src, module)
    if name in seen.defined or name not in seen.imported:
        return None
    source, original = seen.imported[name]
    return handed_on(src, source, original) or source


def is_seqmix(module: str) -> bool:
    return module.split(".")[0] == PACKAGE


def module_problems(src: Path, path: Path) -> list[str]:
    """The module-side rule (this file's docstring) for one module under ``src``."""
    current, is_package = module_of(src, path)
    tree = ast.parse(path.read_text())
    own = bindings(src, current)
    where = path.relative_to(src)
    problems = []
    op_init = is_package and re.fullmatch(rf"{PACKAGE}\.ops\.\w+", current) is not None
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for node in top_level(tree.body):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            if not isinstance(node.value, (ast.List, ast.Tuple)):
                problems.append(f"{where}: __all__ is not a literal list")
                continue
            for elt in node.value.elts:
                if elt.value not in own.defined:
                    problems.append(f"{where}: __all__ names {elt.value}, which it does not define")
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            alias = node.value.value
            source = own.imported.get(alias.id, ("", ""))[0] if isinstance(alias, ast.Name) else ""
            name = own.imported.get(alias.id, ("", ""))[1] if isinstance(alias, ast.Name) else ""
            module = f"{source}.{name}" if name and is_module(src, f"{source}.{name}") else source
            if is_seqmix(module) and is_module(src, module):
                own_backend = op_init and module.startswith(current + ".")
                if not own_backend:
                    problems.append(f"{where}:{node.lineno}: binds {module}.{node.value.attr} to a name of its own")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.asname and a.asname == a.name:
                    problems.append(f"{where}:{node.lineno}: 'as {a.asname}' re-exports {a.name}")
        if isinstance(node, ast.ImportFrom):
            source = source_of(node, current, is_package)
            for a in node.names:
                foreign = is_seqmix(source) and not is_module(src, f"{source}.{a.name}")
                if foreign and (a.asname or a.name) not in loaded:
                    problems.append(f"{where}:{node.lineno}: imports {a.name} from {source} and never uses it")
    return problems


class Importer(ast.NodeVisitor):
    """The importer-side rule for one file: from-imports and attributes of module aliases, scope by scope
    (an alias imported in a function, or a local that shadows one, holds in that function only)."""

    def __init__(self, src: Path, current: str | None, is_package: bool, label: str):
        self.src, self.current, self.is_package, self.label = src, current, is_package, label
        self.scopes: list[dict[str, str | None]] = []
        self.problems: list[str] = []

    def _bind(self, body) -> dict[str, str | None]:
        """Names a scope binds: module aliases -> the dotted module, anything else -> None (a shadow)."""
        names: dict[str, str | None] = {}
        stack = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[node.name] = None
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, ast.Import):
                for a in node.names:
                    names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                source = source_of(node, self.current, self.is_package)
                for a in node.names:
                    dotted = f"{source}.{a.name}"
                    names[a.asname or a.name] = dotted if is_module(self.src, dotted) else None
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, None)
            elif isinstance(node, ast.arg):
                names[node.arg] = None
            stack.extend(ast.iter_child_nodes(node))
        return names

    def _scope(self, node, body) -> None:
        self.scopes.append(self._bind(body))
        self.generic_visit(node)
        self.scopes.pop()

    def visit_Module(self, node):
        self._scope(node, node.body)

    def visit_FunctionDef(self, node):
        self._scope(node, [*node.body, node.args])

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._scope(node, [node.body, node.args])

    def _module(self, node) -> str | None:
        if isinstance(node, ast.Name):
            return next((s[node.id] for s in reversed(self.scopes) if node.id in s), None)
        if isinstance(node, ast.Attribute):
            parent = self._module(node.value)
            return f"{parent}.{node.attr}" if parent and is_module(self.src, f"{parent}.{node.attr}") else None
        return None

    def visit_Attribute(self, node):
        module = self._module(node.value)
        origin = handed_on(self.src, module, node.attr) if module else None
        if origin and is_seqmix(origin):  # a test may patch os or torch where a seqmix module looks them up
            self.problems.append(f"{self.label}:{node.lineno}: {module}.{node.attr} is defined in {origin}")
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        source = source_of(node, self.current, self.is_package)
        for a in node.names:
            if is_seqmix(source) and (origin := handed_on(self.src, source, a.name)):
                self.problems.append(f"{self.label}:{node.lineno}: import {a.name} from {origin}, not {source}")

    def visit_Call(self, node):
        """A paper's ``lazy_artefacts(__name__, {module: [function, ...]})``: each function where it is defined."""
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == "lazy_artefacts" and len(node.args) == 2 and isinstance(node.args[1], ast.Dict):
            for key, value in zip(node.args[1].keys, node.args[1].values):
                module = f"{self.current}.{key.value}"
                for fn in (e.value for e in value.elts):
                    if fn not in bindings(self.src, module).defined:
                        origin = handed_on(self.src, module, fn) or "nowhere"
                        self.problems.append(f"{self.label}:{node.lineno}: artefact {fn} is defined in {origin}, "
                                             f"not {module}")  # fmt: skip
        self.generic_visit(node)


SMK_IMPORT = re.compile(rf"^[ \t]*(from {PACKAGE}[\w.]* import (?:\([^)]*\)|[^\n]+))", re.M)


def importer_problems(src: Path, path: Path, root: Path) -> list[str]:
    """The importer-side rule for one file: Python anywhere, or the seqmix imports of a Snakemake file."""
    label = str(path.relative_to(root))
    if path.suffix == ".py":
        tree = ast.parse(path.read_text())
    else:  # Snakemake syntax is not Python: only its import statements are
        tree = ast.parse("\n".join(m[1] for m in SMK_IMPORT.finditer(path.read_text())))
    current, is_package = module_of(src, path) if path.is_relative_to(src) else (None, False)
    visitor = Importer(src, current, is_package, label)
    visitor.visit(tree)
    return visitor.problems


def importer_files(root: Path) -> list[Path]:
    files = [p for d in ("src", "tests", "benchmarks", "scripts") for p in sorted((root / d).rglob("*.py"))]
    return files + [root / "Snakefile", *sorted((root / "workflow").rglob("*.smk"))]


def test_no_module_hands_on_a_name_it_does_not_define():
    src = ROOT / "src"
    problems = [p for path in sorted((src / PACKAGE).rglob("*.py")) for p in module_problems(src, path)]
    assert problems == []


def test_every_name_is_imported_from_where_it_is_defined():
    src = ROOT / "src"
    problems = [p for path in importer_files(ROOT) for p in importer_problems(src, path, ROOT)]
    assert problems == []


PLANTED = {
    "__init__.py": "",
    "base.py": "def x():\n    return 1\n",
    "good.py": "from .base import x\n\n__all__ = ['y']\n\n\ndef y():\n    return x()\n",
    "facade_all.py": "from .base import x\n\n__all__ = ['x']\n",
    "facade_alias.py": "from .base import x as x\n",
    "facade_noqa.py": "from .base import x  # noqa: F401\n",
    "facade_assign.py": "from . import base\n\nx = base.x\n",
    "ops/__init__.py": "",
    "ops/op/__init__.py": "from . import reference\n\nhelper = reference.helper\n",
    "ops/op/reference.py": "def helper():\n    return 2\n",
    "ops/op/other.py": "from . import reference\n\nhelper = reference.helper\n",
    "user.py": "from . import facade_assign, good\nfrom . import facade_all as F\nfrom .facade_all import x\n"
    "from .ops.op import helper\n\nprint(x, F.x, good.y, facade_assign.x, helper)\n\n\ndef f(F):\n    return F.x\n",
    "papers/__init__.py": "",
    "papers/p/__init__.py": "from seqmix.registry import lazy_artefacts\n\n"
    "ARTEFACTS = lazy_artefacts(__name__, {'figs': ['draw'], 'tables': ['table']})\n",
    "papers/p/figs.py": "from .drawing import draw\n",
    "papers/p/drawing.py": "def draw(spec, out):\n    pass\n",
    "papers/p/tables.py": "def table(spec, out):\n    pass\n",
}


@pytest.fixture
def planted(tmp_path) -> Path:
    """A seqmix tree with one facade of each kind beside clean modules (and a Snakefile importing one)."""
    for rel, text in PLANTED.items():
        path = tmp_path / "src" / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "Snakefile").write_text("from seqmix.facade_noqa import x\n\nrule all:\n    input: []\n")
    return tmp_path


def test_each_kind_of_facade_fails_the_module_check(planted):
    src = planted / "src"
    found = {p for path in sorted((src / PACKAGE).rglob("*.py")) for p in module_problems(src, path)}
    assert found == {
        "seqmix/facade_all.py: __all__ names x, which it does not define",
        "seqmix/facade_all.py:1: imports x from seqmix.base and never uses it",
        "seqmix/facade_alias.py:1: 'as x' re-exports x",
        "seqmix/facade_alias.py:1: imports x from seqmix.base and never uses it",
        "seqmix/facade_noqa.py:1: imports x from seqmix.base and never uses it",
        "seqmix/facade_assign.py:3: binds seqmix.base.x to a name of its own",
        "seqmix/ops/op/other.py:3: binds seqmix.ops.op.reference.helper to a name of its own",
        "seqmix/papers/p/figs.py:1: imports draw from seqmix.papers.p.drawing and never uses it",
    }  # good.py and the op package's own __init__ pass


def test_each_second_path_fails_the_importer_check(planted):
    src = planted / "src"
    files = [planted / "Snakefile", src / PACKAGE / "user.py", src / PACKAGE / "papers/p/__init__.py"]
    found = {p for path in files for p in importer_problems(src, path, planted)}
    assert found == {
        "Snakefile:1: import x from seqmix.base, not seqmix.facade_noqa",
        "src/seqmix/user.py:3: import x from seqmix.base, not seqmix.facade_all",
        "src/seqmix/user.py:6: seqmix.facade_all.x is defined in seqmix.base",
        "src/seqmix/papers/p/__init__.py:3: artefact draw is defined in seqmix.papers.p.drawing, not "
        "seqmix.papers.p.figs",
    }  # F.x inside f (F a parameter there), facade_assign.x (assigned) and the op's helper pass
