import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.validate import validate_view

POLICY = ReleasePolicy(
    id="id",
    qi=["age", "sex"],
    sensitive="s",
    k=2,
    domains={"age": [0, 100], "sex": ["F", "M"], "s": ["a", "b", "c"]},
)


def view(**changes):
    df = pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "age": [30, 40, 50, 60],
            "sex": ["F", "M", "F", "M"],
            "s": ["a", "b", "a", "c"],
        }
    )
    for col, (row, value) in changes.items():
        df[col] = df[col].astype(object)
        df.loc[row, col] = value
    return df


@pytest.mark.parametrize("as_dask", [False, True])
def test_valid_view_gives_size_and_counts(as_dask):
    df = view()
    summary = validate_view(dd.from_pandas(df, npartitions=2) if as_dask else df, POLICY)
    assert summary.n_rows == 4
    np.testing.assert_array_equal(summary.s_counts, [2, 1, 1])


@pytest.mark.parametrize("as_dask", [False, True])
@pytest.mark.parametrize(
    "changes, pattern",
    [
        ({"age": (2, np.nan)}, r"'age' has missing values.*row 2"),
        ({"s": (1, None)}, r"'s' has missing values.*row 1\)"),
        ({"id": (0, None)}, r"'id' has missing values"),
        ({"age": (1, "[45-52]")}, r"numeric QI 'age' holds text.*already generalized.*row 1"),
        ({"age": (3, 130)}, r"outside its declared domain \[0, 100\].*row 3"),
        ({"sex": (0, "X")}, r"'sex' has values \['X'\] not in its declared levels.*row 0"),
        ({"sex": (0, " ")}, r"'sex' has empty strings"),
        (
            {"s": (2, "z")},
            r"sensitive column 's' has values \(not printed.*\) not in its declared domain.*row 2",
        ),
        ({"id": (1, 1)}, r"duplicate 'id' within one view.*\(2 rows: row 0, row 1\)"),
    ],
)
def test_bad_input_names_column_and_row(changes, pattern, as_dask):
    df = view(**changes)
    with pytest.raises(InputError, match=pattern):
        validate_view(dd.from_pandas(df, npartitions=2) if as_dask else df, POLICY)


def test_missing_columns_listed_together():
    with pytest.raises(InputError, match=r"missing column\(s\) \['sex', 's'\]"):
        validate_view(view().drop(columns=["sex", "s"]), POLICY)


def test_empty_view_and_k_too_large():
    with pytest.raises(InputError, match="empty"):
        validate_view(view().iloc[:0], POLICY)
    with pytest.raises(PolicyError, match="k = 5 is larger than the view"):
        validate_view(view(), POLICY.with_overrides(k=5))


def test_category_dtype_with_unused_levels_is_fine():
    df = view()
    df["sex"] = pd.Categorical(df["sex"], categories=["F", "M", "unused"])
    assert validate_view(df, POLICY).n_rows == 4


def test_numbers_read_as_levels_are_refused_in_the_words_of_a_numeric_domain():
    """anonymize with [domains] age = [10] said "categorical QI 'age' has values [...] not in its
    declared levels [10]: add them to [domains]": a bound left out made the ages categorical."""
    from dpriv.policy_fix import NEW_LEDGER, with_domain_hint
    from dpriv.release import anonymize

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {"rid": np.arange(300), "age": rng.integers(20, 80, 300), "dis": rng.choice(["a", "b"], 300)}
    )
    pol = {"id": "rid", "qi": ["age"], "sensitive": "dis", "t": 0.5, "j": 2}
    with pytest.raises(InputError) as caught:
        anonymize(df, {**pol, "domains": {"age": [10]}})
    said = str(caught.value)
    assert said.startswith(
        "numeric domain of 'age' must be [min, max] with min <= max, got [10]: a [domains] entry other "
        "than two numbers declares a categorical QI's levels, and the column holds numbers [71, 58, 50, "
        "36, 38] not in its declared levels; for a numeric QI declare age = [min, max] (the attribute's "
        'true range), for number codes [kinds] age = "categorical" and all its levels in [domains] (300 rows'
    )
    assert NEW_LEDGER in str(with_domain_hint(caught.value, 2))  # a ledger's domains stay as they are
    # floats against whole-number levels: the same words, not "the types differ"
    floats = df.assign(age=df["age"] + 0.5).iloc[:6]
    three = ReleasePolicy(**pol, k=2, domains={"age": [20, 50, 79], "dis": ["a", "b"]})
    with pytest.raises(InputError, match=r"got \[20, 50, 79\]: a \[domains\] entry other than two"):
        validate_view(floats, three)
    # number codes declared categorical, or numbers that all are levels: as before
    codes = three.with_overrides(kinds={"age": "categorical"})
    with pytest.raises(InputError, match=r"^categorical QI 'age' has values \[71\.5, 58\.5,"):
        validate_view(floats, codes)
    assert validate_view(df.assign(age=np.repeat([20, 50, 79], 100)), three).n_rows == 300


DECLARED = {"age": [0, 100], "s": ["a", "b"]}  # a resolved policy: validate_view's own checks


@pytest.mark.parametrize(
    ("age", "kinds", "domains", "kept"),
    [
        (["45+", "50", "51", "52"], {}, {}, "correct or drop these rows"),  # numbers and text
        (["*", "50", "51", "52"], {"age": "numeric"}, DECLARED, "feed the original data"),  # generalized
        (["thirty", "50", "51", "52"], {"age": "numeric"}, DECLARED, "or drop the rows"),
        (["March 1st", "2020-03-01", "2020-03-02", "2020-03-03"], {"age": "date"}, {}, "correct or drop"),
    ],
)
def test_the_advice_to_declare_a_qi_categorical_is_dropped_on_a_running_ledger(age, kinds, domains, kept):
    """Every wording of "declare the QI categorical" (flag, [kinds] alone) gives way, once a
    ledger holds releases, to the new ledger that a changed kind needs; kept on a new ledger."""
    from dpriv.input_checks import resolve_policy
    from dpriv.policy_fix import INTO_NEW_LEDGER, with_kind_hint

    pol = ReleasePolicy(id="rid", qi=["age"], sensitive="s", k=2, t=1.0, j=5.0, kinds=kinds, domains=domains)
    view = pd.DataFrame({"rid": range(4), "age": age, "s": ["a", "b", "a", "b"]})
    with pytest.raises(InputError, match="declare the QI categorical") as caught:
        validate_view(view, pol) if domains else resolve_policy(view, pol)
    assert with_kind_hint(caught.value, 0) is caught.value
    said = str(with_kind_hint(caught.value, 3))
    assert "categorical (" not in said and "categorical in [kinds]" not in said and kept in said
    assert said.endswith(
        "(releases 1..3 are committed and the ledger keeps the kind of each QI; declaring "
        f"one categorical changes the policy, which needs a new ledger: {INTO_NEW_LEDGER})"
    )


def test_a_date_column_outside_a_numeric_domain_is_shown_as_dates():
    """A datetime QI checked against a domain written as numbers reported "values [18317, ...]
    outside its declared domain [45, 74]": dpriv's internal day numbers (a fresh user's drill, s37)."""
    from dpriv.release import anonymize

    df = view().assign(age=pd.to_datetime(["2020-02-25", "2020-02-28", "2020-03-01", "2020-03-05"]))
    with pytest.raises(InputError) as err:
        anonymize(df, POLICY.with_overrides(domains={**POLICY.domains, "age": [45, 74]}))
    said = str(err.value)
    days = "['2020-02-25', '2020-02-28', '2020-03-01', '2020-03-05']"
    assert f"values {days} outside its declared domain" in said
    assert "[1970-02-15, 1970-03-16]" in said  # day 45 and day 74 after 1970-01-01
    assert "numbers there count days from 1970-01-01): widen [domains] or correct" in said
    assert "18317" not in said
