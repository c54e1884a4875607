"""A policy table given a value that is no table, and a ``[domains]`` entry that is no list
(s46 drill): ``domains = "x"`` as a key of ``[release]`` (or ``from_dict``) was exit 1, "internal
error: AttributeError: 'str' object has no attribute 'items'"; ``age = "45-74"`` under
``[domains]`` was told to write ``domains = ["a", "b"]``, no example of a ``[domains]`` entry; ``age =
[[1, 2], [3, 4]]`` (s47) was read as levels and refused by the data as "FrozenList values"."""

import pandas as pd
import pytest
from test_cli import assert_refused
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy

BASE = {"id": "rid", "qi": ["age"], "sensitive": "s"}


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"domains": "x"}, "domains: must be a table, got 'x'"),
        ({"domains": ["age"]}, "domains: must be a table, got ['age']"),
        ({"kinds": "x", "domains": {"age": [1, 2]}}, "kinds: must be a table, got 'x'"),
    ],
)
def test_a_table_given_another_value_is_a_policy_error(fields, said):
    with pytest.raises(PolicyError) as info:
        ReleasePolicy.from_dict({**BASE, **fields})
    assert said in str(info.value), str(info.value)


def write(tmp_path, extra: str):
    policy = tmp_path / "p.toml"
    policy.write_text('[columns]\nid = "rid"\ntime = "view"\nqi = ["age"]\nsensitive = "s"\n' + extra)
    src = tmp_path / "h.csv"
    pd.DataFrame({"rid": [1, 2], "view": [1, 1], "age": [30, 31], "s": ["a", "b"]}).to_csv(src, index=False)
    return policy, src


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ('[release]\ndomains = "x"\n', r"domains must be a table, not 'x' \(policy file .*p.toml\)"),
        (
            '[domains]\nage = "45-74"\n',
            r"domains.age: must be a list under \[domains\]: age = \[min, max\] for a numeric QI, "
            r"age = \[\"a\", \"b\"\] for a categorical QI's levels or the sensitive values, got '45-74'",
        ),
        # s47: read as a categorical QI's levels, refused by the data as "the domain FrozenList values"
        (
            "[domains]\nage = [[1, 2], [3, 4]]\n",
            r"\[domains\] age holds a list \(\[1, 2\]\) among its values \(\[\[1, 2\], \[3, 4\]\]\): "
            r"write age = \[low, high\] for a numeric QI \(e.g. age = \[18, 90\]\), or the list of its "
            r"values for a categorical QI or the sensitive column \(e.g. age = \[\"a\", \"b\"\]\), each a "
            r"number or a text",
        ),
        ('[domains]\ns = ["a", { b = 1 }]\n', r"\[domains\] s holds a table \(\{b = 1\}\) among its values"),
    ],
)
def test_the_command_refuses_them_by_name(tmp_path, extra, said):
    policy, src = write(tmp_path, extra)
    ledger = tmp_path / "L"
    res = CliRunner().invoke(app, ["release", str(src), "--ledger", str(ledger), "--policy", str(policy)])
    assert_refused(res, said)
    assert "Frozen" not in res.output
    assert not ledger.exists()


def test_a_nested_domain_is_refused_in_python_too():
    with pytest.raises(
        PolicyError, match=r"\[domains\] age holds a list \(\[3, 4\]\) among its values"
    ) as info:
        ReleasePolicy.from_dict({**BASE, "domains": {"age": [[3, 4], 5]}})
    assert "Frozen" not in str(info.value)


@pytest.mark.parametrize("bounds", ["[nan, 74]", "[45, inf]", "[-inf, 74]"])
def test_nan_and_inf_are_no_bounds(tmp_path, bounds):
    """TOML writes nan and inf as numbers: they were refused as a width that "overflows float64"."""
    policy = tmp_path / "p.toml"
    policy.write_text(f'[columns]\nqi = ["age"]\nsensitive = "s"\n[domains]\nage = {bounds}\n')
    with pytest.raises(
        PolicyError, match=r"numeric domain of 'age' is \[.*\]: nan and inf are no bounds"
    ) as info:
        ReleasePolicy.from_toml(policy)
    assert "overflows" not in str(info.value)


def test_a_finite_domain_too_wide_still_overflows():
    with pytest.raises(PolicyError, match="its width max - min overflows float64"):
        ReleasePolicy.from_dict({**BASE, "domains": {"age": [-1e308, 1e308]}})
