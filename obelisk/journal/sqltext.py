"""The tables of the SQL stores, their upgrades, and the words of their ownership errors
(one text for every store, so both backends say the same)."""

from __future__ import annotations

#: SQLite's tables (schema 2): ``runs`` holds each run's header, owner, epoch, lease and
#: status; ``events`` the rows.
SQLITE_SCHEMA = (
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, version INTEGER NOT NULL, "
    "digest TEXT NOT NULL, header TEXT NOT NULL, created TEXT NOT NULL, "
    "owner TEXT, epoch INTEGER NOT NULL DEFAULT 0, lease_until REAL, "
    "status TEXT NOT NULL DEFAULT 'open', delegate INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, "
    "node INTEGER, data TEXT, PRIMARY KEY (run_id, seq)) WITHOUT ROWID",
)

#: From each older SQLite schema to the current one. Schema 1 had no owners: its runs
#: get epoch 0, no lease, and the status their last ``end`` row records.
SQLITE_MIGRATIONS = {
    1: (
        "ALTER TABLE runs ADD COLUMN owner TEXT",
        "ALTER TABLE runs ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN lease_until REAL",
        "ALTER TABLE runs ADD COLUMN status TEXT NOT NULL DEFAULT 'open'",
        "ALTER TABLE runs ADD COLUMN delegate INTEGER NOT NULL DEFAULT 0",
        "UPDATE runs SET delegate = 1 WHERE json_valid(header) AND "
        "json_type(header, '$.options.parent') IS NOT NULL",
        "UPDATE runs SET status = coalesce((SELECT CASE WHEN kind = 'resume' THEN 'open' "
        "WHEN json_valid(data) THEN coalesce(json_extract(data, '$.status'), 'unknown') "
        "ELSE 'unknown' END FROM events WHERE events.run_id = runs.run_id AND kind IN "
        "('end', 'resume') ORDER BY seq DESC LIMIT 1), 'open')",
    ),
}


def owned_message(where: str, run_id: str, owner: str, left: float) -> str:
    """A claim refused: who owns the run, for how long, and what to do."""
    return (f"{where}: run {run_id!r} is owned by {owner}, whose lease is live for "
            f"{max(left, 0.0):.1f} s more: another process is running it. Wait until it "
            "ends or its lease expires (an owner that died stops renewing it), or take the "
            "run over (--take-over; take_over=True), which stops that owner at its next "
            "write")


def taken_message(where: str, run_id: str, owner: str | None, epoch: int) -> str:
    """An append or a renewal refused: the run was claimed by another owner."""
    return (f"{where}: run {run_id!r} was taken over by {owner or 'another owner'} while "
            f"this process held it (epoch {epoch}): this process stops here and writes "
            "nothing more; what it recorded before is kept")
