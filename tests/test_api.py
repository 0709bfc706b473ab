"""The public namespace: everything in __all__ imports, estimators follow the conventions."""

import inspect

import pytest

import ardselect


@pytest.mark.parametrize("name", ardselect.__all__)
def test_every_public_name_imports(name):
    assert getattr(ardselect, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ardselect.nope  # noqa: B018


def test_exceptions_subclass_the_matching_builtins():
    assert issubclass(ardselect.exceptions.DataError, ValueError)
    assert issubclass(ardselect.exceptions.LabelError, ValueError)
    assert issubclass(ardselect.exceptions.MissingFileError, FileNotFoundError)
    assert issubclass(ardselect.ParameterError, ValueError)
    assert issubclass(ardselect.ParameterError, TypeError)  # a value of the wrong type
    for name in ("DataError", "LabelError", "FileFormatError", "MissingFileError", "ModelError",
                 "ParameterError"):
        assert issubclass(getattr(ardselect.exceptions, name), ardselect.ArdselectError)


def test_the_front_door_is_small_and_the_documented_old_paths_still_work():
    assert len(ardselect.__all__) <= 24
    # documented at the top level before they moved to their modules: still found there
    assert ardselect.ep_probit is ardselect.diagnostics.ep_probit
    assert ardselect.split_rhat is ardselect.diagnostics.split_rhat
    assert ardselect.DataScaleWarning is ardselect.exceptions.DataScaleWarning
    assert ardselect.DataScaleWarning is ardselect.model.DataScaleWarning
    for name in ("ep_probit", "DataScaleWarning", "ParameterError"):
        assert name not in ardselect.__all__
    # undocumented there: gone
    for name in ("DataError", "LabelError", "EPResult", "CRITERIA", "PATH_CRITERIA"):
        with pytest.raises(AttributeError):
            getattr(ardselect, name)


def test_anndata_functions_follow_the_signature_rules():
    # STYLE.md sec. 2: adata first, at most two more positional arguments, then keyword-only.
    fn = ardselect.rank_genes
    params = list(inspect.signature(fn).parameters.values())
    assert params[0].name == "adata"
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(positional) <= 3
    assert "key_added" in inspect.signature(fn).parameters


ESTIMATORS = [name for name in ardselect.__all__
              if inspect.isclass(getattr(ardselect, name))
              and hasattr(getattr(ardselect, name), "get_params")]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_documented_defaults_are_the_real_defaults(name):
    # Every constructor parameter is documented as "name : type, default=value" (numpydoc; names
    # may be grouped, "a, b : float, default=1"), and the value is the signature's default.
    # (inclusion_penalty was once documented as 0.0 while the default was "bic".)
    import ast
    import re

    cls = getattr(ardselect, name)
    doc = inspect.getdoc(cls)
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        m = re.search(rf"^(?:\w+, )*{p.name}(?:, \w+)* : .*default=(.+)$", doc, re.M)
        assert m, f"{name}: {p.name} has no documented default"
        documented = ast.literal_eval(m.group(1).strip())
        assert documented == p.default, f"{name}.{p.name}: {documented!r} != {p.default!r}"


def test_the_cli_uses_the_public_api_only():
    # User guide, "Package layout": the CLI is a client of the library. No private module or name of
    # ardselect may be imported or reached by attribute from cli/ (dunders such as __version__
    # are public).
    import ast
    from pathlib import Path

    def private(name):
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    found = []
    for path in sorted((Path(__file__).parents[1] / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ardselect"):
                parts = node.module.split(".") + [a.name for a in node.names]
                found += [f"{path.name}:{node.lineno}" for p in parts if private(p)]
            elif isinstance(node, ast.Import):
                found += [f"{path.name}:{node.lineno}" for a in node.names
                          if a.name.startswith("ardselect")
                          and any(private(p) for p in a.name.split("."))]
            elif isinstance(node, ast.Attribute) and private(node.attr):
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id == "ardselect":
                    found.append(f"{path.name}:{node.lineno}")
    assert not found, f"private ardselect names used by the CLI at {found}"
