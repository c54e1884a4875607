"""How large a history to release is (:class:`HistorySize`, counted by
:func:`dpriv.cluster.history_size`): what decides whether a run needs a Dask cluster, and the
status line that says so before the release starts."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HistorySize:
    """What decides where a history is released (:func:`dpriv.cluster.history_size`).

    ``rows``: tuples of the history; ``largest_view``: tuples of its largest view still to
    release and ``respondents``: distinct ids of the ledger's last state and of the views still
    to release, the most any release of the run starts from (both None when ``rows`` alone
    exceeds :data:`dpriv.cluster.SMALL_HISTORY_ROWS`: not counted); ``views``: how many views
    are still to release (None: not counted), which only words :meth:`describe`."""

    rows: int
    largest_view: int | None
    respondents: int | None
    views: int | None = field(default=None, compare=False)

    @property
    def small(self) -> bool:
        """Every view is released in process (:func:`dpriv.release.in_process`) and the whole
        history fits the client: no cluster is needed."""
        from dpriv.cluster import SMALL_HISTORY_ROWS  # read at each call (tests lower the thresholds)
        from dpriv.release import SMALL_STATE_ROWS, SMALL_VIEW_ROWS

        return (
            self.rows <= SMALL_HISTORY_ROWS
            and self.largest_view is not None
            and self.largest_view <= SMALL_VIEW_ROWS
            and self.respondents is not None
            and self.respondents <= SMALL_STATE_ROWS
        )

    def describe(self) -> str:
        """For the status line; the views counted are those still to release."""
        if not self.largest_view:
            return f"{self.rows} tuples, no view left to release"
        if self.views == 1:  # the one state the run makes holds them all: a count, not a bound
            if self.rows == self.largest_view:
                return f"one view of {self.rows} tuples and {self.respondents} respondents"
            left = f"{self.largest_view} tuples, {self.respondents} respondents"
            return f"{self.rows} tuples, one view left to release ({left})"
        views = f"{self.views} views" if self.views else "views"
        return (
            f"{self.rows} tuples, {views} still to release of at most {self.largest_view} tuples, "
            f"at most {self.respondents} respondents"
        )
