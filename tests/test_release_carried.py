"""The state one release hands the next (dpriv.release_start.Carried): its rows counted once,
and only when a later release reads them."""

from dpriv.release_start import Carried


class _Counted:
    """A stand-in for a Dask state: ``len`` says 7 and counts how often it was asked."""

    def __init__(self) -> None:
        self.asked = 0

    def __len__(self) -> int:
        self.asked += 1
        return 7


def test_rows_are_counted_once_when_first_read_and_never_when_given():
    frame = _Counted()
    carried = Carried(frame, None, 3)
    assert frame.asked == 0  # the last release's state: never counted
    assert carried.rows == 7 and carried.rows == 7
    assert frame.asked == 1  # one compute, however often a release reads it
    given = Carried(_Counted(), 5, None)
    assert given.rows == 5 and given.frame.asked == 0
    assert Carried(frame, 0, None).rows == 0  # a new ledger's empty state: 0 is a count, not unknown
