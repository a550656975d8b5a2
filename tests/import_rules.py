"""The direction of imports (DESIGN.md, "Rules of the house"), checked on the source with `ast`.

`violations(root)` parses every `.py` file under `root/jaxml`, `root/kernels` and `root/scripts`
(imports inside functions included) and returns one readable line per broken rule:

- a paper imports another paper;
- a shared package (`jaxml.core`, `data`, `nn`, `models`, `llm`, `compress`, `examples`,
  `jaxml.progress`, `kernels`) imports a paper;
- a paper or a shared package other than the examples imports `jaxml.examples`;
- `jaxml.models` imports `jaxml.llm` (llm uses models, never the reverse);
- `jaxml.core` imports models, llm, nn, compress, kernels or a data-set module (of `jaxml.data`
  only the batching module `jaxml.data.pipeline` is allowed);
- `jaxml.data` imports core, nn, models, llm or compress; `jaxml.nn` imports anything of jaxml
  outside nn; `jaxml.progress` imports anything of jaxml (it is the leaf both core and data use);
- a `_private` name is imported from another package, or read as `module._name` from a module of
  another package;
- the shared packages import each other in a cycle.

A package here is `jaxml.<name>`, `jaxml.papers.<slug>`, `kernels.<op>` or `scripts.<file>`.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib

SCANNED = ("jaxml", "kernels", "scripts")
SHARED = ("jaxml.core", "jaxml.data", "jaxml.nn", "jaxml.models", "jaxml.llm", "jaxml.compress",
          "jaxml.examples", "jaxml.progress", "kernels")


@dataclasses.dataclass(frozen=True)
class Import:
    importer: str        # dotted module name of the file
    target: str          # dotted module imported (for `from m import n`: `m.n` if that is a module, else `m`)
    names: tuple[str, ...]   # names taken by `from m import ...` ('' for a plain import)
    path: str
    line: int


def module_name(root: pathlib.Path, path: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_of(module: str) -> str:
    """`jaxml.papers.lqer.methods` -> `jaxml.papers.lqer`; `jaxml.core.train` -> `jaxml.core`;
    `kernels.lqer_matmul.api` -> `kernels.lqer_matmul`; `jaxml` -> `jaxml`."""
    parts = module.split(".")
    if parts[:2] == ["jaxml", "papers"] and len(parts) >= 3:
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _resolve_relative(importer: str, is_package: bool, level: int, module: str | None) -> str:
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([module] if module else []))


def imports_of(root: pathlib.Path, path: pathlib.Path, modules: set[str]) -> list[Import]:
    importer = module_name(root, path)
    tree = ast.parse(path.read_text(), filename=str(path))
    rel = str(path.relative_to(root))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append(Import(importer, alias.name, ("",), rel, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(importer, path.name == "__init__.py", node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:   # `from jaxml.core import progress`: the module itself
                    out.append(Import(importer, sub, ("",), rel, node.lineno))
                else:
                    out.append(Import(importer, base, (alias.name,), rel, node.lineno))
    return out


def _private_attribute_reads(root: pathlib.Path, path: pathlib.Path, modules: set[str]) -> list[Import]:
    """`alias._name` where `alias` is bound to a module of the scanned tree by an import."""
    importer = module_name(root, path)
    tree = ast.parse(path.read_text(), filename=str(path))
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:
                    bound[alias.asname or alias.name] = sub
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            out.append(Import(importer, bound[node.value.id], (node.attr,), str(path.relative_to(root)), node.lineno))
    return out


def _rule(imp: Import) -> str | None:
    """The rule that `imp` breaks (None if it breaks none), ignoring the private-name rule."""
    src, dst = imp.importer, imp.target
    if not (_within(dst, "jaxml") or _within(dst, "kernels")):
        return None
    src_pkg, dst_pkg = package_of(src), package_of(dst)
    src_paper, dst_paper = _within(src, "jaxml.papers"), _within(dst, "jaxml.papers") and dst != "jaxml.papers"
    if src_paper and dst_paper and src_pkg != dst_pkg:
        return "a paper imports another paper"
    if any(_within(src, s) for s in SHARED) and dst_paper:
        return "a shared package imports a paper"
    if _within(dst, "jaxml.examples") and not _within(src, "jaxml.examples") and not _within(src, "scripts"):
        return "only scripts may import the examples (papers and shared packages may not)"
    if _within(src, "jaxml.models") and _within(dst, "jaxml.llm"):
        return "jaxml.models imports jaxml.llm (llm uses models, not the reverse)"
    if _within(src, "jaxml.core"):
        for banned in ("jaxml.models", "jaxml.llm", "jaxml.nn", "jaxml.compress", "kernels"):
            if _within(dst, banned):
                return f"jaxml.core imports {banned}"
        if _within(dst, "jaxml.data") and dst not in ("jaxml.data", "jaxml.data.pipeline"):
            return "jaxml.core imports a data-set module (only jaxml.data.pipeline is allowed)"
    if _within(src, "jaxml.data"):
        for banned in ("jaxml.core", "jaxml.nn", "jaxml.models", "jaxml.llm", "jaxml.compress"):
            if _within(dst, banned):
                return f"jaxml.data imports {banned}"
    if _within(src, "jaxml.nn") and not (_within(dst, "jaxml.nn") or dst == "jaxml.progress"):
        return "jaxml.nn imports jaxml outside nn"
    if src == "jaxml.progress":
        return "jaxml.progress (a leaf) imports jaxml"
    return None


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Elementary cycles found by depth-first search (one per back edge)."""
    found, state = [], {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    return found


def violations(root: str | pathlib.Path) -> list[str]:
    """One line `path:line: importer -> target: rule` per broken rule under `root`."""
    root = pathlib.Path(root)
    files = [p for top in SCANNED if (root / top).is_dir() for p in sorted((root / top).rglob("*.py"))]
    modules = {module_name(root, p) for p in files}
    out, edges = [], {}
    for path in files:
        for imp in imports_of(root, path, modules) + _private_attribute_reads(root, path, modules):
            if not (_within(imp.target, "jaxml") or _within(imp.target, "kernels")):
                continue
            where = f"{imp.path}:{imp.line}: {imp.importer} -> {imp.target}"
            rule = _rule(imp)
            if rule:
                out.append(f"{where}: {rule}")
            private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
            if private and package_of(imp.importer) != package_of(imp.target):
                out.append(f"{where}: private name(s) {private} imported from another package")
            src, dst = package_of(imp.importer), package_of(imp.target)
            shared = lambda m: any(_within(m, s) for s in SHARED)
            if src != dst and shared(imp.importer) and shared(imp.target):
                top = lambda p: "kernels" if p.startswith("kernels") else p
                if top(src) != top(dst):
                    edges.setdefault(top(src), set()).add(top(dst))
    for cycle in _cycles(edges):
        out.append(f"shared packages import each other in a cycle: {' -> '.join(cycle)}")
    return sorted(set(out))
