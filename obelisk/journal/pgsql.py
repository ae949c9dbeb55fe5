"""The PostgreSQL journal's tables and statements (schema 1), and their upgrades.

Every table is prefixed ``obelisk_`` so a journal can share a database; choose another
schema with libpq's ``options=-csearch_path=NAME`` in the URL.
"""

from __future__ import annotations

#: The schema this obelisk writes; an older one is upgraded, a newer one refused.
SCHEMA_VERSION = 1

#: A transaction-wide advisory lock: two processes opening a new database at once make
#: the tables once.
LOCK = "SELECT pg_advisory_xact_lock(hashtext('obelisk-journal-schema'))"

META = ("CREATE TABLE IF NOT EXISTS obelisk_meta (key text PRIMARY KEY, "
        "value text NOT NULL)")

#: From each schema (0: none yet) to the next.
MIGRATIONS = {
    0: (
        "CREATE TABLE obelisk_runs (run_id text PRIMARY KEY, version integer NOT NULL, "
        "digest text NOT NULL, header text NOT NULL, created text NOT NULL, owner text, "
        "epoch bigint NOT NULL DEFAULT 0, lease_until timestamptz, "
        "status text NOT NULL DEFAULT 'open', delegate boolean NOT NULL DEFAULT false, "
        "ord bigserial)",
        "CREATE TABLE obelisk_events (run_id text NOT NULL REFERENCES obelisk_runs, "
        "seq bigint NOT NULL, kind text NOT NULL, node integer, data text, "
        "PRIMARY KEY (run_id, seq))",
        "CREATE INDEX obelisk_runs_open ON obelisk_runs (ord) WHERE status = 'open'",
    ),
}

HEADER = "run_id, version, digest, header, created"

CREATE = (f"INSERT INTO obelisk_runs ({HEADER}, delegate, owner, epoch, lease_until) "
          "VALUES (%(run)s, %(version)s, %(digest)s, %(header)s, %(created)s, %(delegate)s, "
          "%(owner)s::text, CASE WHEN %(owner)s::text IS NULL THEN 0 ELSE 1 END, CASE WHEN "
          "%(owner)s::text IS NULL THEN NULL ELSE clock_timestamp() + "
          "make_interval(secs => %(lease)s) END) "
          "ON CONFLICT (run_id) DO NOTHING")

#: The rows are written only while the run's epoch is the one named: the lock on the
#: run's row waits for a claim in progress and then reads the epoch it committed.
APPEND = (
    "WITH held AS (SELECT run_id FROM obelisk_runs WHERE run_id = %(run)s "
    "AND epoch = %(epoch)s FOR SHARE) "
    "INSERT INTO obelisk_events (run_id, seq, kind, node, data) "
    "SELECT held.run_id, r.seq, r.kind, r.node, r.data FROM held, "
    "unnest(%(seqs)s::bigint[], %(kinds)s::text[], %(nodes)s::integer[], %(data)s::text[]) "
    "AS r(seq, kind, node, data)")

STATUS = ("UPDATE obelisk_runs SET status = coalesce(%s::text, status), lease_until = "
          "CASE WHEN %s::boolean THEN NULL ELSE lease_until END "
          "WHERE run_id = %s AND epoch = %s")

LAST_SEQ = "SELECT coalesce(max(seq), 0) FROM obelisk_events WHERE run_id = %s"

_LEASE = "clock_timestamp() + make_interval(secs => %(lease)s)"

CLAIM = (f"UPDATE obelisk_runs SET owner = %(owner)s, epoch = epoch + 1, lease_until = {_LEASE} "
         "WHERE run_id = %(run)s AND (%(take)s OR owner = %(owner)s OR lease_until IS NULL "
         "OR lease_until <= clock_timestamp()) RETURNING epoch")

CLAIM_NEXT = (
    f"UPDATE obelisk_runs SET owner = %(owner)s, epoch = epoch + 1, lease_until = {_LEASE} "
    "WHERE run_id = (SELECT run_id FROM obelisk_runs WHERE status = 'open' AND NOT delegate "
    "AND (lease_until IS NULL OR lease_until <= clock_timestamp()) "
    "AND run_id <> ALL(%(skip)s::text[]) ORDER BY ord LIMIT 1 FOR UPDATE SKIP LOCKED) "
    "RETURNING run_id, epoch")

RENEW = (f"UPDATE obelisk_runs SET lease_until = {_LEASE} "
         "WHERE run_id = %(run)s AND epoch = %(epoch)s")

RELEASE = "UPDATE obelisk_runs SET lease_until = NULL WHERE run_id = %s AND epoch = %s"

OWNERSHIP = ("SELECT owner, epoch, coalesce(extract(epoch FROM lease_until - "
             "clock_timestamp()), 0)::float8, status FROM obelisk_runs WHERE run_id = %s")
