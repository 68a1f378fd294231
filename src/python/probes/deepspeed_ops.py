"""opforge's probe of a DeepSpeed-style tree, run by opforge with the project's own Python.

Two modes; stdout carries one JSON document and nothing else (whatever the project prints goes to
stderr):

``catalogue ROOT``
    op_builder/ read with ``ast`` (no import, so no torch): the builder classes the CUDA accelerator
    registers. DeepSpeed's accelerator/cuda_accelerator.py takes every *Builder class of the
    top-level modules except OpBuilder/CUDAOpBuilder, then the host-side optimizers of op_builder/cpu.

``compat ROOT module:Class...``
    Imports each builder as setup.py does (ROOT first on sys.path and the working folder), asks
    ``is_compatible(verbose=True)``, and for a compatible op constructs its extension the way
    setup.py will (``builder.builder()``: sources, flags, link flags and the imports they need),
    compiling nothing. An op whose construction fails is not buildable: the answer names the
    exception, where the project raised it, and for a missing module the package that provides it.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import os
import sys
import traceback
from typing import Any, Dict

CPU_HOST_OPTIMIZERS = ["CPUAdamBuilder", "CPUAdagradBuilder", "CPULionBuilder"]
ABSTRACT = {"OpBuilder", "CUDAOpBuilder"}

# Modules DeepSpeed's builders import that ship under another distribution name.
PROVIDERS = {
    "dskernels": "deepspeed-kernels",
    "cutlass": "nvidia-cutlass",
    "triton": "triton",
    "mpi4py": "mpi4py",
}

ClassInfo = Dict[str, Any]  # typing's form: evaluated at run time, and Python 3.8 has no dict[...]


def base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def read_module(path: str, module: str, classes: dict[str, ClassInfo]) -> list[str]:
    """Records each class of the module (by name, and as name@module); returns their names."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    names = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        info: ClassInfo = {"module": module, "bases": [base_name(b) for b in node.bases], "attrs": {}, "methods": {}}
        for item in node.body:
            if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                if isinstance(item.value, ast.Constant) and isinstance(item.value.value, str):
                    info["attrs"][item.targets[0].id] = item.value.value
            elif isinstance(item, ast.FunctionDef):
                info["methods"][item.name] = item
        classes.setdefault(node.name, info)
        classes[node.name + "@" + module] = info
        names.append(node.name)
    return names


def lookup(classes: dict[str, ClassInfo], name: str, what: str, key: str) -> Any:
    """The attribute or method `key` of class `name` or its nearest base (breadth first)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        n = todo.pop(0)
        if n in seen or n not in classes:
            continue
        seen.add(n)
        c = classes[n]
        if key in c[what]:
            return c[what][key]
        todo.extend(c["bases"])
    return None


def derives(classes: dict[str, ClassInfo], name: str, base: str) -> bool:
    seen: set[str] = set()
    todo = list(classes.get(name, {}).get("bases", []))
    while todo:
        n = todo.pop()
        if n == base:
            return True
        if n in seen:
            continue
        seen.add(n)
        todo.extend(classes.get(n, {}).get("bases", []))
    return False


def literal_list(classes: dict[str, ClassInfo], cls: str, expr: ast.expr | None, depth: int = 0) -> list[str] | None:
    """The strings of a literal list expression (lists, `+`, calls of self's methods); else None."""
    if expr is None or depth > 8:
        return None
    if isinstance(expr, (ast.List, ast.Tuple)):
        out = []
        for e in expr.elts:
            if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
                return None
            out.append(e.value)
        return out
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        a = literal_list(classes, cls, expr.left, depth + 1)
        b = literal_list(classes, cls, expr.right, depth + 1)
        return None if a is None or b is None else a + b
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and not expr.args
        and isinstance(expr.func.value, ast.Name)
        and expr.func.value.id == "self"
    ):
        return method_list(classes, cls, expr.func.attr, depth + 1)
    return None


def method_list(classes: dict[str, ClassInfo], cls: str, method: str, depth: int = 0) -> list[str] | None:
    fn = lookup(classes, cls, "methods", method)
    if fn is None:
        return None
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if len(returns) != 1:
        return None
    return literal_list(classes, cls, returns[0].value, depth)


def source_strings(classes: dict[str, ClassInfo], cls: str) -> list[str]:
    """Every string constant in the *sources methods of the class and its concrete bases."""
    out: list[str] = []
    seen: set[str] = set()
    todo = [cls]
    while todo:
        n = todo.pop()
        if n in seen or n not in classes or n in ABSTRACT:
            continue
        seen.add(n)
        for name, fn in classes[n]["methods"].items():
            if "sources" in name:
                out += [c.value for c in ast.walk(fn) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        todo.extend(classes[n]["bases"])
    return out


def catalogue(root: str) -> dict[str, Any]:
    ob = os.path.join(root, "op_builder")
    classes: dict[str, ClassInfo] = {}
    found: list[tuple[str, str]] = []
    for helper in ("builder.py", os.path.join("cpu", "builder.py")):
        p = os.path.join(ob, helper)
        if os.path.isfile(p):
            read_module(p, "op_builder." + helper[:-3].replace(os.sep, "."), classes)
    for f in sorted(os.listdir(ob)):
        p = os.path.join(ob, f)
        if not f.endswith(".py") or f in ("__init__.py", "all_ops.py", "builder.py") or not os.path.isfile(p):
            continue
        module = "op_builder." + f[:-3]
        for n in read_module(p, module, classes):
            found.append((n, module))
    cpu = os.path.join(ob, "cpu")
    cpu_found: dict[str, str] = {}
    if os.path.isdir(cpu):
        for f in sorted(os.listdir(cpu)):
            if f.endswith(".py") and f not in ("__init__.py", "builder.py"):
                module = "op_builder.cpu." + f[:-3]
                sub: dict[str, ClassInfo] = {}
                for n in read_module(os.path.join(cpu, f), module, sub):
                    if n in CPU_HOST_OPTIMIZERS:
                        cpu_found[n] = module
                        classes[n] = sub[n]
    ops: dict[str, dict[str, Any]] = {}
    order = [(n, m) for n, m in found if n not in cpu_found] + sorted(cpu_found.items())
    for n, module in order:
        if not n.endswith("Builder") or n in ABSTRACT:
            continue
        info = classes.get(n + "@" + module) or classes.get(n)
        if info is None or info["module"] != module:
            continue  # imported into this module, defined elsewhere
        name = lookup(classes, n, "attrs", "NAME")
        var = lookup(classes, n, "attrs", "BUILD_VAR")
        if not name or not var or name in ops:
            continue
        sources = method_list(classes, n, "sources")
        # Sources computed at run time: every string in the *sources methods still names the files.
        strings = sources if sources is not None else source_strings(classes, n)
        cuda_sources = any(s.endswith((".cu", ".cuh")) for s in strings)
        # The kinds as opforge spells them (ops::kind_name).
        kind = "cuda" if cuda_sources else ("cpu+cuda" if derives(classes, n, "CUDAOpBuilder") else "cpu")
        ops[name] = {"name": name, "build_var": var, "class": module + ":" + n, "sources": sources, "kind": kind}
    return {"ops": [ops[k] for k in sorted(ops)]}


def raised_at(error: BaseException, root: str) -> str:
    """`path:line` of the innermost frame inside the project (relative to root); else empty."""
    where = ""
    for frame in traceback.extract_tb(error.__traceback__):
        path = os.path.abspath(frame.filename)
        if path.startswith(os.path.abspath(root) + os.sep):
            where = f"{os.path.relpath(path, root)}:{frame.lineno}"
    return where


def failure(cls: str, call: str, error: BaseException, root: str) -> dict[str, Any]:
    """An answer for a builder whose `call` raised: the exception, where, and how to fix it."""
    where = raised_at(error, root)
    reason = f"{cls}.{call} raised {type(error).__name__}: {error}"
    if where:
        reason += f" (at {where})"
    answer: dict[str, Any] = {"ok": False, "stage": call.split("(")[0], "reason": reason}
    if isinstance(error, ModuleNotFoundError) and error.name:
        top = error.name.split(".")[0]
        answer["module"] = top
        answer["fix"] = f"pip install {PROVIDERS.get(top, top)} (it provides the module '{top}')"
    return answer


def in_tree(path: str, root: str) -> str:
    """A path under the tree relative to it (the build compiles a copy elsewhere), others as given."""
    full = os.path.abspath(path)
    return os.path.relpath(full, root) if full == root or full.startswith(root + os.sep) else path


def extension_answer(ext: Any, root: str) -> dict[str, Any]:
    """What a constructed extension tells of its compiles: its sources, the name torch's
    BuildExtension defines as TORCH_EXTENSION_NAME (the last part of the module name), and the
    flags its C++ files get besides torch's own (its include folders, then extra_compile_args'
    cxx), so that opforge knows before the build which ops' files compile alike."""
    extra = getattr(ext, "extra_compile_args", None) or []
    cxx = extra.get("cxx", []) if isinstance(extra, dict) else extra
    return {
        "sources": [in_tree(str(s), root) for s in getattr(ext, "sources", [])],
        "extension": str(getattr(ext, "name", "")).split(".")[-1],
        "host_args": ["-I" + in_tree(str(d), root) for d in getattr(ext, "include_dirs", []) or []]
        + [str(a) for a in cxx],
    }


def ask(root: str, spec: str) -> dict[str, Any]:
    """One builder: is_compatible(verbose=True), then (when compatible) builder() as setup.py calls it."""
    module, cls = spec.split(":")
    text = io.StringIO()
    answer: dict[str, Any]
    with contextlib.redirect_stdout(text):
        try:
            builder = getattr(importlib.import_module(module), cls)()
            ok = bool(builder.is_compatible(verbose=True))
            answer = {"ok": ok, "stage": "is_compatible", "reason": (getattr(builder, "error_log", None) or "").strip()}
        except BaseException as e:  # a builder that cannot even be asked is not compatible
            answer = failure(cls, "is_compatible()", e, root)
        if answer["ok"]:
            try:
                ext = builder.builder()
                answer.update(extension_answer(ext, root))
            except BaseException as e:  # setup.py would die here: the op cannot be built
                answer = failure(cls, "builder()", e, root)
    printed = [line.strip() for line in text.getvalue().splitlines() if "WARNING" in line or "ERROR" in line]
    if not answer["ok"] and not answer["reason"]:
        answer["reason"] = "; ".join(printed) or cls + ".is_compatible() returned False"
    sys.stderr.write(text.getvalue())
    return answer


def compat(root: str, wanted: list[str]) -> dict[str, Any]:
    root = os.path.abspath(root)
    sys.path.insert(0, root)
    os.chdir(root)
    return {spec: ask(root, spec) for spec in wanted}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("catalogue", "compat"):
        sys.stderr.write("usage: deepspeed_ops.py catalogue ROOT | compat ROOT [module:Class...]\n")
        return 2
    mode, root = argv[0], argv[1]
    stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # compilers and prints of the project go to stderr
    result = catalogue(root) if mode == "catalogue" else compat(root, argv[2:])
    stdout.write(json.dumps(result) + "\n")
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
