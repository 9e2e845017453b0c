"""Render a PackageModel to file contents with the jinja2 templates in ``tvmffi_gen.render.templates``.

The helpers here turn model objects into source lines (signatures, bodies, docstrings); the
templates arrange them. Output depends only on the model, so it is byte-identical across runs.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, cast

import jinja2

from ..model.package import (
    ClassModel,
    FieldModel,
    FunctionModel,
    MethodModel,
    ModuleModel,
    PackageModel,
    Param,
)
from ..model.registration import decorator_head
from ..model.typemap import ANY_ANNOTATION
from ..registry.runtime_files import api_level, fields_class
from ..text.layout import docstring_lines, filled, fit, fit_annotated_call, fit_call_with_tuple, tuple_text
from .import_lines import ImportLine, standard_import_groups, used_imports
from .parts import init_doc, match_args_line, module_header, q, render_params, replace_doc, result_doc
from .suppressions import (
    base_member_names,
    line_ignore,
    line_rules_written,
    lines_ignoring,
    modules_on_import_cycles,
    mypy_disabled_codes,
    parameter_rules,
    pyright_disabled_rules,
    pyright_header,
)
from .visitors import render_visitors

__all__ = ["render_package", "RECORDED_LIBDIR_PREFIX", "template_environment"]

#: Recorded library paths under the apache-tvm-ffi library folder are stored relative to it.
RECORDED_LIBDIR_PREFIX = "$TVM_FFI_LIBDIR/"


def template_environment() -> jinja2.Environment:
    """The jinja2 environment over the packaged templates, with the helpers they call."""
    loader = jinja2.FunctionLoader(
        lambda name: resources.files("tvmffi_gen.render.templates").joinpath(name).read_text(encoding="utf-8")
    )
    env = jinja2.Environment(
        loader=loader,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    helpers: dict[str, Callable[..., object]] = {
        "doc": _docstring,
        "sig": _sig,
        "stub": _stub,
        "init_signature": _init_signature,
        "init_doc": init_doc,
        "init_body": _init_body,
        "method_decorators": _method_decorators,
        "function_signature": _function_signature,
        "register_line": _register_line,
        "field_lines": _field_lines,
        "match_args_line": match_args_line,
        "replace_doc": replace_doc,
        "q": q,
    }
    # jinja2 types its globals by its default ones: the helpers are just more of them
    cast(Any, env.globals).update(helpers, fields_class=fields_class())
    return env


def _docstring(text: str, indent: str) -> str:
    return "\n".join(docstring_lines(text, indent))


def signature_lines(prefix: str, items: list[str], ret: str, indent: str, comment: str = "") -> list[str]:
    """``def name(a, b) -> R:`` on one line when it fits, else one parameter per line."""
    return fit(f"{prefix}(", items, f") -> {ret}:", indent, comment=comment)


def _sig(prefix: str, items: list[str], ret: str, indent: str, ignore_override: bool) -> list[str]:
    # mypy reports an incompatible override on the line of the ``def`` (a property over a base
    # class's field also as [misc]: a read-only property over a writable attribute)
    comment = "  # type: ignore[override, misc]" if ignore_override else ""
    return signature_lines(prefix, items, ret, indent, comment)


def _stub(prefix: str, items: list[str], ret: str, indent: str) -> list[str]:
    """A method declared for type checkers and IDEs (``def f(...) -> R: ...``), on one line when
    it fits."""
    return fit(f"{prefix}(", items, f") -> {ret}: ...", indent, inner_line=True)


def _field_lines(f: FieldModel) -> list[str]:
    """A field read from memory: an attribute of the class's nested fields class holding its
    runtime descriptor (``register`` moves it onto the class, whose type key it takes; the name
    comes from the attribute), laid out the way black would (arguments, then annotation
    parameters, broken out as lines overflow). No base class declares it there, so it overrides
    nothing."""
    if f.write is None:
        # Final: assigning it reads as a read-only error in both checkers ("cannot assign to
        # final attribute"), not as a type mismatch
        ann_name, ann_args, ann_tail = "_t.Final[_bind.ReadOnlyField", [f.getter_type], "]"
    else:
        ann_name, ann_args, ann_tail = "_bind.Field", [f.getter_type, f.setter_type], ""
    if f.kind is None:  # through the registry's accessors
        call = "_bind.registry_field("
        args = ["write=True"] if f.write is not None else []
    else:
        call = "_bind.field("
        args = [q(f.kind), str(f.offset)] + ([f"write={q(f.write)}"] if f.write is not None else [])
    if f.reg_name != f.name:
        args.append(f"name={q(f.reg_name)}")
    return fit_annotated_call(f.name, (f"{ann_name}[", ann_args, f"]{ann_tail}"), call, args, "        ")


def _replace_signature(pkg: PackageModel, cls: ClassModel) -> list[str]:
    assert cls.replace is not None
    items = ["self", "*", *[p.render() for p in cls.replace.params]] if cls.replace.params else ["self"]
    lines = _sig(f"def {cls.replace.name}", items, cls.replace.ret, "    ", cls.replace.override_ignore)
    overrides = cls.replace.overrides or cls.replace.name in base_member_names(pkg, cls)
    return _ignoring(lines, cls.replace.params, reads=overrides)


def _ignoring(lines: list[str], params: list[Param], *, reads: bool, ret: str = "") -> list[str]:
    """A def's lines with the basedpyright-only rules its parameters and result need off (see
    ``suppressions.LINE_RULES``); ``reads``: its parameters count as read (an override)."""
    marks = [(p.render(), parameter_rules(p.name, p.annotation, reads_parameters=reads)) for p in params]
    return lines_ignoring(lines, marks, {"reportAny"} if ret == "_t.Any" else ())


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _register_line(cls: ClassModel) -> str:
    """``@_bind.register(type_key)``: it binds the class's fields (and checks their offsets)."""
    args = [q(cls.type_key)]
    if cls.init is not None and cls.init.kind == "none":
        args.append("constructible=False")
    return "\n".join(fit(decorator_head(), args, ")", ""))


def _init_signature(cls: ClassModel) -> list[str]:
    assert cls.init is not None
    if cls.init.kind == "none":
        return signature_lines("def __init__", ["self", "_never: _t.NoReturn", "/"], "None", "    ")
    params = cls.init.params
    if params and params[0].kind == "varargs":
        lines = signature_lines("def __init__", ["self", "*args: _t.Any"], "None", "    ")
        return lines_ignoring(lines, [("*args: _t.Any", {"reportAny"})])
    return _ignoring(signature_lines("def __init__", render_params(params, "self"), "None", "    "), params, reads=True)


def _init_body(cls: ClassModel) -> str:
    assert cls.init is not None
    key = cls.type_key
    if cls.init.kind == "none":
        return f"_bind.not_constructible(self, {q(key)})"
    params = cls.init.params
    if params and params[0].kind == "varargs":
        return f"_bind.construct(self, {q(key)}, args)"
    if cls.init.kind == "method":
        return f"_bind.construct(self, {q(key)}, {tuple_text([p.name for p in params])})"
    pairs = [f"({q(p.reg_name)}, {p.name})" for p in params]
    return "\n".join(fit_call_with_tuple("_bind.construct_auto(", ["self", q(key)], pairs, ")", " " * 8)).strip()


def _method_signature(pkg: PackageModel, cls: ClassModel, m: MethodModel) -> list[str]:
    # an override's parameters count as read (override_ignore: a base, maybe of a --use package,
    # has a member of this name)
    reads = _is_dunder(m.name) or m.override_ignore or m.name in base_member_names(pkg, cls)
    if not m.typed:
        items = ["*args: _t.Any"] if m.is_static else ["self", "*args: _t.Any"]
        lines = _sig(f"def {m.name}", items, "_t.Any", "    ", m.override_ignore)
        return _ignoring(lines, [_VARARGS], reads=reads, ret="_t.Any")
    lines = _sig(
        f"def {m.name}", render_params(m.params, None if m.is_static else "self"), m.ret, "    ", m.override_ignore
    )
    return _ignoring(lines, m.params, reads=reads, ret=m.ret)


#: the parameters of a native function the registry gives no signature for
_VARARGS = Param("args", ANY_ANNOTATION, None, "varargs")


def _native_decorator(args: list[str], indent: str) -> list[str]:
    """The decorator that makes the def the native function: ``@_bind.registry_method(key, name)``."""
    call, *rest = args
    return fit(f"@_bind.{call}(", rest, ")", indent)


def _method_decorators(cls: ClassModel, m: MethodModel) -> list[str]:
    lines = ["    @staticmethod"] if m.is_static else []
    return lines + _native_decorator(["registry_method", q(cls.type_key), q(m.reg_name)], "    ")


def _function_signature(f: FunctionModel) -> list[str]:
    if not f.typed:
        return _ignoring(
            signature_lines(f"def {f.name}", ["*args: _t.Any"], "_t.Any", ""), [_VARARGS], reads=False, ret="_t.Any"
        )
    return _ignoring(
        signature_lines(f"def {f.name}", render_params(f.params), f.ret, ""), f.params, reads=False, ret=f.ret
    )


def _function_decorator(fn: FunctionModel, pkg_name: str) -> list[str]:
    """``@_bind.registry_function(name)``, or for a function the library exports
    ``@_bind.exported_function(lib_module, name)``."""
    result = [f"result={fn.result.name}"] if fn.result else []
    if fn.exported:
        return _native_decorator(["exported_function", q(pkg_name + "._lib"), q(fn.reg_name), *result], "")
    return _native_decorator(["registry_function", q(fn.reg_name), *result], "")


def _module_doc(pkg: PackageModel, mod: ModuleModel) -> str:
    if mod.is_root:
        text = f"Typed bindings of `{pkg.library}`, generated by tvmffi-gen."
        if mod.subpackages:
            subs = ", ".join(f"`{sub}`" for sub, _ in mod.subpackages)
            text += f"\n\nNamespaces (imported on first use): {subs}."
    else:
        text = f"Namespace `{'.'.join(mod.namespace)}` of `{pkg.library}`."
    return "\n".join(docstring_lines(text, ""))


def _all_lines(mod: ModuleModel) -> str:
    return "\n".join(filled("__all__ = [", [f'"{name}"' for name in mod.exported_names()], "]"))


def render_module(env: jinja2.Environment, pkg: PackageModel, mod: ModuleModel) -> str:
    def imports(namespaces: set[tuple[str, ...]]) -> list[ImportLine]:
        return [ImportLine(pkg.modules[ns].py_module, pkg.modules[ns].alias) for ns in sorted(namespaces)]

    runtime = imports({ns for ns in mod.runtime_imports if ns != mod.namespace})
    runtime += used_imports(mod.used_imports)
    typing_only = imports({ns for ns in mod.type_imports if ns not in mod.runtime_imports})
    all_lines = _all_lines(mod)
    with line_rules_written() as line_rules:
        body = env.get_template("module.py.jinja").render(
            pkg=pkg,
            mod=mod,
            module_doc=_module_doc(pkg, mod),
            runtime_imports=runtime,
            type_imports=typing_only,
            all_lines=all_lines,
            function_decorator=functools.partial(_function_decorator, pkg_name=pkg.name),
            method_signature=functools.partial(_method_signature, pkg),
            replace_signature=functools.partial(_replace_signature, pkg),
            line_ignore=line_ignore,
            result_doc=result_doc,
            import_groups=standard_import_groups(module_aliases(mod, bool(typing_only))),
        )
    rules = pyright_disabled_rules(pkg, mod, modules_on_import_cycles(pkg), fields_in_body=False)
    mypy_codes = mypy_disabled_codes(mod, fields_in_body=False)
    return module_header(pkg.header(), mypy_codes, pyright_header(rules, line_rules=line_rules)) + body


def module_aliases(mod: ModuleModel, typing_block: bool) -> set[str]:
    """The aliases ``mod``'s text names: its own (as ``module.py.jinja`` and the helpers above
    lay it out) and those its annotations name (of which
    :func:`.import_lines.standard_import_groups` writes the standard ones; the others are the
    generated modules the model imports)."""
    aliases: set[str] = set()
    for cls in mod.classes:
        aliases.add("_bind")  # register
        if cls.enum_entries:
            aliases.add("_t")  # ClassVar
        if any(f.write is None for f in cls.fields):
            aliases.add("_t")  # Final (a read-only field's annotation names no setter type)
        if cls.init is not None and cls.init.kind == "none":
            aliases.add("_t")  # NoReturn
        if any(not m.typed for m in cls.methods):
            aliases.add("_t")
    for fn in mod.functions:
        aliases.add("_bind")  # the native function's decorator
        if not fn.typed or fn.result is not None:
            aliases.add("_t")  # Any; NamedTuple
    if typing_block or mod.subpackages:  # TYPE_CHECKING; the module __getattr__'s Any
        aliases.add("_t")
    bases, others = mod.annotations()
    return aliases.union(*(annotation.aliases for annotation in bases + others))


def recorded_path_expr(library_path: str, libdir: str | None, out_dir: Path | None) -> tuple[str, set[str]]:
    """Python source for where the package finds its library, as portable as it can be:
    relative to apache-tvm-ffi's library folder for libraries shipped there, relative to the
    package for a library beside the package's folder (a project's build tree), else absolute;
    with the standard aliases it names."""
    path = os.path.realpath(library_path)
    if libdir:
        real_libdir = os.path.realpath(libdir)
        if path.startswith(real_libdir + os.sep):
            rel = os.path.relpath(path, real_libdir).replace(os.sep, "/")  # no backslash escapes on Windows
            return f'_os.path.join(_os.path.dirname(_rt.LIB_PATH), "{rel}")', {"_os", "_rt"}
    if out_dir is not None:
        package_dir = os.path.realpath(out_dir)
        project = os.path.dirname(package_dir)
        if path.startswith(project + os.sep):
            rel = os.path.relpath(path, package_dir).replace(os.sep, "/")
            return f'_os.path.normpath(_os.path.join(_os.path.dirname(__file__), "{rel}"))', {"_os"}
    return json.dumps(path), set()


def original_path_expr(pkg: PackageModel, recorded: str) -> str:
    """The absolute path to fall back on when the package records its library relative to
    itself (``None`` otherwise, or with ``--portable``)."""
    if not pkg.record_absolute or "__file__" not in recorded:
        return "None"
    return json.dumps(os.path.realpath(pkg.library_path))


def render_lib(env: jinja2.Environment, pkg: PackageModel, libdir: str | None, out_dir: Path | None = None) -> str:
    recorded, aliases = recorded_path_expr(pkg.library_path, libdir, out_dir)
    original = original_path_expr(pkg, recorded)
    bundled = f'_os.path.join(_os.path.dirname(__file__), "{pkg.library}")' if pkg.bundled else "None"
    lazy = sorted((c.type_key, pkg.modules[c.namespace].py_module) for c in pkg.classes.values())
    # the level check, finding and loading the library; the Module of its exports
    aliases |= {"_bind"} | ({"_rt"} if pkg.has_exports else set[str]()) | ({"_os"} if pkg.bundled else set[str]())
    return env.get_template("lib.py.jinja").render(
        api_level=api_level(),  # the templates write the code of the runtime's level
        import_groups=standard_import_groups(aliases),
        pkg=pkg,
        recorded_path=recorded,
        original_path=original,
        bundled_path=bundled,
        lazy_types=lazy,
        used=[(u.name, used_imports({f"{u.name}._lib"})[0].alias) for u in pkg.used_packages],
    )


def render_package(pkg: PackageModel, libdir: str | None = None, out_dir: Path | None = None) -> dict[str, str]:
    """All files of the package: relative path -> text."""
    env = template_environment()
    files: dict[str, str] = {}
    from .face import render_face  # it lays out with this module's helpers

    for mod in pkg.modules.values():
        files[mod.file] = render_module(env, pkg, mod)
        files[mod.file + "i"] = render_face(env, pkg, mod, pkg.header(), _module_doc(pkg, mod), _all_lines(mod))
    files["_lib.py"] = render_lib(env, pkg, libdir, out_dir)
    files["visitors.py"] = render_visitors(env, pkg)  # every package has one (docs/generated-packages.md), types or not
    files["py.typed"] = ""
    return dict(sorted(files.items()))
