"""click's usage errors read as dpriv's other bad input (s34): ``dpriv release ... --k 0`` printed
click's usage block, "Try ... --help" and ``Error: Invalid value for '--k': Input should be
greater than or equal to 1`` (the value given not named). Every command now says one ``error:``
line naming the option, the value as typed and what the option takes; exit 2, nothing written;
``--help`` and ``dpriv`` alone still print the help."""

import re

import pytest
from test_drill_repeats import only_error
from typer.testing import CliRunner

from dpriv.cli import app


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], prog_name="dpriv")  # as the script names itself


@pytest.fixture
def history(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("respondent_id,view,age,exam_result\n1,1,50,a\n")
    return path


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--k", "0"], r"^error: --k must be a whole number >= 1, not '0'$"),  # out of range
        (["--k", "-3"], r"^error: --k must be a whole number >= 1, not '-3'$"),
        (["--k", "abc"], r"^error: --k must be a whole number >= 1, not 'abc'$"),  # wrong type
        (["--k", "2.5"], r"^error: --k must be a whole number >= 1, not '2.5'$"),
        (["--t", "half"], r"^error: --t must be a number, not 'half'$"),
        (["--npartitions", "0"], r"^error: --npartitions must be a whole number >= 1, not '0'$"),
    ],
)
def test_a_bad_value_names_the_option_the_value_and_what_it_takes(history, tmp_path, flags, said):
    res = run("release", history, "--ledger", tmp_path / "L", *flags)
    only_error(res, said)
    assert not (tmp_path / "L").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["generate", "medical", "--views", "0", "--out", "{tmp}/g"],
            r"^error: --views must be a whole number >= 1, not '0'$",
        ),
        (
            ["generate", "medical", "--view-size", "ten", "--out", "{tmp}/g"],
            r"^error: --view-size must be a whole number >= 1, not 'ten'$",
        ),
        # a check of the option's own (a callback): its message, with the value as typed
        (
            ["generate", "medical", "--attendance", "1.5", "--out", "{tmp}/g"],
            r"^error: --attendance '1.5': 1.5 is not a probability in \(0, 1\]$",
        ),
        (["attack", "{tmp}/L", "--history", "{tmp}/h.csv", "--seed", "x"], None),
    ],
)
def test_every_command_words_its_usage_errors_so(tmp_path, args, said):
    res = run(*[a.format(tmp=tmp_path) for a in args])
    if said is None:  # an option this command does not have
        only_error(res, r"^error: dpriv attack has no option --seed: dpriv attack --help lists its options$")
    else:
        only_error(res, said)
    assert not (tmp_path / "g").exists() and not (tmp_path / "L").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["release", "h", "--bogus"], r"^error: dpriv release has no option --bogus: dpriv release --help"),
        (["release", "h", "--kk", "3"], r"^error: dpriv release has no option --kk \(did you mean --k\?\)"),
        (["--bogus"], r"^error: dpriv has no option --bogus: dpriv --help lists its options$"),
        (["generate", "medical", "--bogus"], r"^error: dpriv generate medical has no option --bogus"),
        (["relase"], r"^error: no such command 'relase'.*dpriv --help lists its commands$"),
        (["release", "h", "--k"], r"^error: option '--k' requires an argument: dpriv release --help"),
    ],
)
def test_an_unknown_option_or_command_is_one_error_line(args, said):
    only_error(run(*args), said)


def test_help_is_still_printed():
    res = run("release", "--help")
    assert res.exit_code == 0 and "--k" in res.output and "error:" not in res.output
    res = run()  # dpriv alone: its help (click's exit 2 for a missing command), not an error line
    assert "release" in res.output and "error:" not in res.output
    res = run("generate", "medical", "--help")
    assert res.exit_code == 0 and "--views" in res.output


@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (["release", "h", "--kk", "3"], " (did you mean --k?)"),  # a letter added
        (["release", "h", "--polcy", "p"], " (did you mean --policy?)"),  # a letter dropped
        (["release", "h", "--ledgr", "L"], " (did you mean --ledger?)"),
        (["release", "h", "--clsuter"], " (did you mean --cluster?)"),  # two letters swapped
        # of a flag's two spellings, the one typed: --no-clustr was offered --cluster too
        (["release", "h", "--no-clustr"], " (did you mean --no-cluster?)"),
        (["release", "h", "--clustr"], " (did you mean --cluster?)"),
        (["release", "h", "--no-progres"], " (did you mean --no-progress?)"),
        # click's guesses (difflib >= 0.6 with the dashes) named options nothing like the one typed
        (["demo", "--nosuch"], ""),
        (["attack", "L", "--t", "1"], ""),
        (["release", "h", "--out", "o"], ""),
        (["release", "h", "--views", "2"], ""),
    ],
)
def test_an_unknown_option_is_offered_only_a_plausible_typo_of_it(args, meant):
    command, option = args[0], next(a for a in args if a.startswith("--"))
    said = f"error: dpriv {command} has no option {option}{meant}: dpriv {command} --help lists its options"
    only_error(run(*args), "^" + re.escape(said) + "$")
