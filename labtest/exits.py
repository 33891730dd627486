"""Exit statuses: one table for every command that ends in a verdict.

A script after ``labtest run``, ``labtest report`` or ``labtest burnin`` tells PASS, FAIL
and INCOMPLETE apart by the same number (``labtest burnin`` said 3 for INCOMPLETE, which
is ``labtest run``'s "no results"). ``labtest doctor`` answers another question (is the
fabric healthy now?) and keeps its own table (docs/doctor.md).
"""

from __future__ import annotations

PASS = 0
FAIL = 1
#: bad arguments or input; also pytest's own status for an interrupted run
USAGE = 2
#: the run ended without a results document
NO_RESULTS = 3
#: nothing failed, but not everything required was proven (pytest itself uses 0-5); a
#: stopped burn-in run too (resumable: its units are not proven yet)
INCOMPLETE = 6
#: nothing could be judged: the testbed was refused (a fault the lab cannot inject, ...) or
#: the emulated lab did not start; one located error, no verdict table
BROKEN = 7

#: a results document's run verdict (``reports.model.RunVerdictName``) -> its exit status
BY_VERDICT = {"PASS": PASS, "FAIL": FAIL, "INCOMPLETE": INCOMPLETE}
