"""Name -> constructor registries for mixers, models and tasks; the packages of papers; the model-side
workers the pipeline runs.

A config names components by string; ``register_*`` decorators fill the tables, and ``get_*`` fail
with the list of known names. ``load_all()`` imports every module that registers something: seqmix's own
(every module of ``COMPONENT_PACKAGES``) and, once per process, the entry points other installed packages
declare in the groups ``seqmix.mixers``, ``seqmix.models`` and ``seqmix.tasks``, e.g. in the plugin's pyproject.toml::

    [project.entry-points."seqmix.mixers"]
    my_mixer = "my_package.mixers:MyMixer"

The entry point's name is the registered name; its object is the class (registered under that name unless
its module already did so with ``@register_mixer``), so a plugin adds a component without editing seqmix.

Papers: ``seqmix.papers.<paper>`` in this tree, or the package an entry point of the group ``seqmix.papers``
names (``my_paper = "my_package.my_paper"``), for a paper kept out of tree.

Workers: the pipeline side (config, claims, tracking, report, pipeline, cli) never imports the model side
(ops, mixers, models, tasks, training, diagnostics, papers); it reaches the model side only here, by name
(``worker``, ``artefact_function``), so the import contracts in pyproject.toml can state the two sides.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from collections.abc import Callable

_TABLES: dict[str, dict[str, Callable]] = {"mixer": {}, "model": {}, "task": {}}

# Packages whose modules register components. Every module in them is imported by ``load_all`` (found with
# pkgutil, so a new mixer, model or task file needs no edit here); imported lazily so `import seqmix` stays cheap.
COMPONENT_PACKAGES = ("seqmix.mixers", "seqmix.models", "seqmix.tasks")


ENTRY_POINT_GROUPS = {"mixer": "seqmix.mixers", "model": "seqmix.models", "task": "seqmix.tasks"}
_plugins_loaded = False  # entry points are scanned once per process (a scan reads every installed dist-info)


class PluginError(RuntimeError):
    """An entry point in a seqmix group that cannot be loaded or registered (names the entry point)."""


class UnknownName(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


def _register(kind: str, name: str):
    def deco(obj):
        table = _TABLES[kind]
        if name in table and table[name] is not obj:
            raise ValueError(f"{kind} {name!r} registered twice")
        table[name] = obj
        obj.registered_name = name
        return obj

    return deco


def register_mixer(name: str):
    return _register("mixer", name)


def register_model(name: str):
    return _register("model", name)


def register_task(name: str):
    return _register("task", name)


def component_modules() -> list[str]:
    """Every module of ``COMPONENT_PACKAGES`` (sorted, so registration order is the same in every process)."""
    names = []
    for pkg_name in COMPONENT_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        names += [f"{pkg_name}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    return sorted(names)


_scanned: tuple | None = None  # the component packages' search paths the last full import covered


def load_all() -> None:
    """Import every component module (once per set of package paths: ``get`` calls this for every name a
    config resolves, and listing the packages costs a directory scan) and the plugins' entry points."""
    global _scanned
    paths = tuple(tuple(importlib.import_module(p).__path__) for p in COMPONENT_PACKAGES)
    if paths != _scanned:
        for mod in component_modules():
            importlib.import_module(mod)
        _scanned = paths
    if not _plugins_loaded:
        load_entry_points()


def load_entry_points() -> None:
    """Register the components other installed packages declare under ``ENTRY_POINT_GROUPS``.

    A broken plugin stops with its entry point named rather than being skipped: a config naming its
    component would otherwise fail later as an unknown name, far from the cause."""
    global _plugins_loaded
    _plugins_loaded = True
    for kind, group in ENTRY_POINT_GROUPS.items():
        for ep in importlib.metadata.entry_points(group=group):
            where = f"entry point {ep.name!r} = {ep.value!r} in group {group!r}"
            try:
                obj = ep.load()
            except Exception as e:  # any import error of third-party code
                raise PluginError(f"{where}: cannot be loaded: {type(e).__name__}: {e}") from e
            if _TABLES[kind].get(ep.name) is obj:
                continue  # its module registered it under the same name already
            if not callable(obj):
                raise PluginError(f"{where}: expected a class or callable, got {type(obj).__name__}")
            try:
                _register(kind, ep.name)(obj)
            except ValueError as e:
                raise PluginError(f"{where}: {e}") from None


def names(kind: str) -> list[str]:
    load_all()
    return sorted(_TABLES[kind])


def get(kind: str, name: str) -> Callable:
    load_all()
    try:
        return _TABLES[kind][name]
    except KeyError:
        raise UnknownName(f"unknown {kind} {name!r}; known: {', '.join(sorted(_TABLES[kind]))}") from None


def get_mixer(name: str) -> Callable:
    return get("mixer", name)


def get_model(name: str) -> Callable:
    return get("model", name)


def get_task(name: str) -> Callable:
    return get("task", name)


# ----------------------------------------------------------------------------- papers

PAPER_GROUP = "seqmix.papers"


def paper_module(paper: str) -> str:
    """The module name of a paper's package: the entry point ``paper`` of the group ``seqmix.papers`` when
    an installed package declares one, else ``seqmix.papers.<paper>``."""
    for ep in importlib.metadata.entry_points(group=PAPER_GROUP):
        if ep.name == paper:
            return ep.value.split(":")[0]
    return f"seqmix.papers.{paper}"


def paper_dir(paper: str):
    """The directory of a paper's package, found without importing it (None when there is none)."""
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec(paper_module(paper))
    except ImportError:
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def import_papers(papers: list[str]) -> None:
    """Import every module of these papers' packages (their artefacts, theory, analyses): what the warm worker
    (seqmix.pipeline.warm) loads once instead of in every artefact job; the 74 in-tree modules take 0.15 s."""
    import pkgutil

    for paper in papers:
        package = paper_module(paper)
        where = paper_dir(paper)
        if where is None:
            continue
        importlib.import_module(package)
        for info in pkgutil.walk_packages([str(where)], package + "."):
            importlib.import_module(info.name)


def artefact_function(paper: str, name: str) -> Callable:
    """``<paper package>.ARTEFACTS[name]``, an artefact's ``fn(spec, out)``; LookupError naming what exists."""
    module_name = paper_module(paper)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise LookupError(f"no package {module_name} for paper {paper!r} ({e})") from None
    try:
        table = module.ARTEFACTS
    except AttributeError:
        raise LookupError(f"{module_name} defines no ARTEFACTS (the map of its declared artefacts)") from None
    if name not in table:
        raise LookupError(
            f"unknown artefact {name!r} of paper {paper}; {module_name}.ARTEFACTS has: {', '.join(table) or 'nothing'}"
        )
    return table[name]


def lazy_artefacts(package: str, where: dict[str, list[str]]) -> dict[str, Callable]:
    """A paper's ``ARTEFACTS`` map from ``{module: [function, ...]}`` (modules of ``package``): each artefact
    ``package.module.function``, imported when called, so an artefact job imports only its own module (a
    table job never loads matplotlib, an analysis of CSVs never torch)."""

    def lazy(module: str, function: str) -> Callable:
        def run(spec: dict, out) -> None:
            getattr(importlib.import_module(f"{package}.{module}"), function)(spec, out)

        run.__name__ = run.__qualname__ = function
        run.__doc__ = f"{package}.{module}.{function}, imported on call."
        return run

    table = {name: lazy(module, name) for module, names in where.items() for name in names}
    if len(table) != sum(len(n) for n in where.values()):
        raise ValueError(f"{package}: an artefact name is given twice")
    return table


# ----------------------------------------------------------------------------- model-side workers

# What the pipeline runs on the model side, as "module:attribute" (imported on first use).
WORKERS = {
    "stages": "seqmix.training.work:StageWork",  # train / evaluate / diagnose one leaf
    "allocator_tunables": "seqmix.training.allocator:tunables",  # GLIBC_TUNABLES of a cluster job
}


def worker(name: str):
    """The model-side object ``WORKERS[name]`` (a module, class or function)."""
    try:
        target = WORKERS[name]
    except KeyError:
        raise UnknownName(f"unknown worker {name!r}; known: {', '.join(sorted(WORKERS))}") from None
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, attr) if attr else obj
