#!/usr/bin/env python3
"""Checks the library's dependency directions from its `crate::` paths (in `use` lines and
inline, test modules included; comments skipped).

The top-level modules of src/ fall in three tiers:

- core: what every family builds on, itself in layers (lowest first, see CORE_LAYERS): the
  random streams and element types; errors; metrics, linear algebra, memory and
  communication; data; dissimilarities; backends and devices; and on top the estimator
  pattern, model files, evaluation, data sets and plots;
- families: kmeans, kmedoids, density, kernel, mixture, gp;
- tools above them: select_k (fits a family for several k and compares the fits) and methods
  (the description of every method, which names the families' estimators and models).

Allowed: a core module -> a core module of a lower layer (never the same or a higher one, so
the core has no circle and no up-arrow); a family -> core and -> itself; mixture, kernel and
gp -> kmeans (they seed with k-means++ and start from k-means); a tool -> core and families.
A core module names other core modules by their path (`crate::scalar::Scalar`), not through
the crate root's re-exports. Anything else fails, one line per file and edge. A path through
a re-export of lib.rs (`crate::KMedoids`) counts as the module it comes from. The command
line (src/bin) is a separate crate that reaches the library through `clustr::` only, and the
compiler already forbids the other direction.

Usage: check-deps.py [ROOT] (default: the repository holding this script).
"""
import os
import re
import sys

CORE_LAYERS = [
    {"rng"},
    {"scalar"},
    {"error"},
    {"metric", "linalg", "memory", "comm"},
    {"data"},
    {"dissim"},
    {"backend"},
    {"estimator", "model_file", "eval", "datasets", "plot"},
]
CORE = set().union(*CORE_LAYERS)
FAMILIES = {"kmeans", "kmedoids", "density", "kernel", "mixture", "gp"}
EXTRA = {("mixture", "kmeans"), ("kernel", "kmeans"), ("gp", "kmeans")}
# Above the families: what compares their fits (choosing k) and the methods' description;
# they may use core and families.
TOOLS = {"select_k", "methods"}


def core_layer(module):
    return next(i for i, layer in enumerate(CORE_LAYERS) if module in layer)


PATH = re.compile(r"\bcrate::(\{|[A-Za-z_][A-Za-z0-9_]*)")


def reexports(src):
    """Names lib.rs re-exports at the crate root, mapped to their module."""
    text = open(os.path.join(src, "lib.rs"), encoding="utf-8").read()
    names = {}
    for module, items in re.findall(r"^pub use (\w+)::\{?([^;]*?)\}?;", text, re.M):
        for item in items.split(","):
            item = item.strip().split(" as ")[-1].strip()
            if item:
                names[item] = module
    return names


def group_heads(text, start):
    """The first names of the items of the `{...}` group opening at `text[start]`."""
    depth, item, heads = 0, "", []
    for ch in text[start:]:
        if ch == "{":
            depth += 1
            if depth == 1:
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and ch == ",":
            heads.append(item)
            item = ""
        else:
            item += ch
    heads.append(item)
    return [h.strip().split("::")[0].strip() for h in heads if h.strip()]


def uses(text, exported):
    """(line, top-level module, whether through a root re-export) for every `crate::` path of
    a file, comments skipped."""
    code = "\n".join(line.split("//", 1)[0] for line in text.split("\n"))
    for m in PATH.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        names = group_heads(code, m.start(1)) if m.group(1) == "{" else [m.group(1)]
        for name in names:
            yield line, exported.get(name, name), name in exported


def layer(module):
    if module in CORE:
        return "core"
    if module in FAMILIES:
        return "family"
    if module in TOOLS:
        return "tool"
    return None


def describe(module):
    if module in CORE:
        return f"core layer {core_layer(module)}"
    return layer(module)


def allowed(source, target):
    if source == target:
        return True
    if source in CORE:
        return target in CORE and core_layer(target) < core_layer(source)
    if target in CORE:
        return True
    if source in TOOLS:
        return target in FAMILIES
    return (source, target) in EXTRA


def check(root):
    src = os.path.join(root, "src")
    exported = reexports(src)
    problems = []
    for here, dirs, files in sorted(os.walk(src)):
        rel_dir = os.path.relpath(here, src)
        if rel_dir.split(os.sep)[0] == "bin":
            continue
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            rel = os.path.normpath(os.path.join(rel_dir, name))
            module = rel.split(os.sep)[0].removesuffix(".rs")
            if module in ("lib", "main"):
                continue
            if layer(module) is None:
                problems.append(f"src/{rel}: module `{module}` is in no layer (add it to CORE_LAYERS, FAMILIES or TOOLS)")
                continue
            text = open(os.path.join(here, name), encoding="utf-8").read()
            lines = text.split("\n")
            for i, target, via_root in sorted(set(uses(text, exported))):
                if module in CORE and via_root and target != module:
                    problems.append(
                        f"src/{rel}:{i}: {module} names {target} through the crate root's re-export; "
                        f"use its module path: {lines[i - 1].strip()}"
                    )
                    continue
                if layer(target) is None or allowed(module, target):
                    continue
                problems.append(
                    f"src/{rel}:{i}: {module} ({describe(module)}) -> {target} ({describe(target)}) "
                    f"is not an allowed direction: {lines[i - 1].strip()}"
                )
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check-deps: {len(problems)} import(s) against the allowed directions", file=sys.stderr)
        sys.exit(1)
    print("check-deps: every crate:: path follows the allowed directions (the core in layers, no circle)")


if __name__ == "__main__":
    main()
