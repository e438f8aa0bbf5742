#!/usr/bin/env python3
"""Differential sqllogictest runner: PostgreSQL 15 is the oracle, Permafrost is under test.

Every record of the given sqllogictest files is run on PostgreSQL first; it counts only
if PostgreSQL answers it as the file expects. It is then run on Permafrost and classified
as pass, wrong result, error (SQLSTATE + first line of the message), timeout or lost
connection / server crash. Statements (CREATE TABLE, INSERT, ...) are classified the same
way, since one that fails on Permafrost makes later queries fail.

usage: run.py --permafrost BIN --files FILE... [--limit-per-file N] [--report OUT.md]
See README.md in this folder.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import psycopg

ENGINE = "postgresql"  # the name we answer to in skipif/onlyif
PG_BIN_DEFAULT = "/usr/lib/postgresql/15/bin"
DEFAULT_HASH_THRESHOLD = 8  # as sqllogictest.c, until a hash-threshold record says otherwise


# --------------------------------------------------------------------------------------
# Parsing (follows sqllogictest.c: comment lines are invisible, records are separated by
# blank lines, skipif/onlyif prefix a record, the first 4 tokens of a line are used).
# --------------------------------------------------------------------------------------

@dataclass
class Record:
    kind: str                     # statement | query | hash-threshold | halt | unknown
    line: int                     # line number of the record's first line (1-based)
    sql: str = ""
    expect_ok: bool = True        # statement ok / statement error
    types: str = ""
    sort: str = "nosort"
    label: str = ""
    expected: list = field(default_factory=list)  # lines after ----
    arg: str = ""                 # hash-threshold value / unknown record's first token


def parse_file(path: str) -> list[Record]:
    with open(path, "rb") as f:
        raw = f.read().decode("utf-8", errors="surrogateescape")
    lines = []  # (lineno, text) with comments dropped, blank lines as ""
    for i, ln in enumerate(raw.split("\n"), start=1):
        if ln.endswith("\r"):
            ln = ln[:-1]
        if ln.strip() == "":
            ln = ""
        elif ln.startswith("#"):
            continue
        lines.append((i, ln))
    records: list[Record] = []
    i, n = 0, len(lines)
    while i < n:
        while i < n and lines[i][1] == "":
            i += 1
        if i >= n:
            break
        block = []
        while i < n and lines[i][1] != "":
            block.append(lines[i])
            i += 1
        rec = _parse_block(block)
        if rec is not None:
            records.append(rec)
    return records


def _parse_block(block) -> Record | None:
    j = 0
    skip = False
    while j < len(block):
        tok = block[j][1].split()
        if tok[0] not in ("skipif", "onlyif"):
            break
        db = tok[1].lower() if len(tok) > 1 else ""
        if tok[0] == "skipif" and db == ENGINE:
            skip = True
        if tok[0] == "onlyif" and db != ENGINE:
            skip = True
        j += 1
    if j >= len(block) or skip:
        return None
    lineno, first = block[j]
    tok = first.split()
    rest = [t for _, t in block[j + 1:]]
    if tok[0] == "statement":
        return Record("statement", lineno, sql="\n".join(rest),
                      expect_ok=(len(tok) > 1 and tok[1] == "ok"))
    if tok[0] == "query":
        types = tok[1] if len(tok) > 1 else ""
        sort = tok[2] if len(tok) > 2 else "nosort"
        label = tok[3] if len(tok) > 3 else ""
        if "----" in rest:
            k = rest.index("----")
            sql, expected = rest[:k], rest[k + 1:]
        else:
            sql, expected = rest, []
        return Record("query", lineno, sql="\n".join(sql), types=types, sort=sort,
                      label=label, expected=expected)
    if tok[0] == "hash-threshold":
        return Record("hash-threshold", lineno, arg=tok[1] if len(tok) > 1 else "0")
    if tok[0] == "halt":
        return Record("halt", lineno)
    return Record("unknown", lineno, arg=tok[0])


# --------------------------------------------------------------------------------------
# Value formatting, as sqllogictest's engines do it: NULL, (empty), I as a 32-bit integer
# (sqlite3_column_int), R as %.3f, T with bytes outside ' '..'~' shown as '@'.
# Values are taken as the text the server sends (simple query protocol, text format).
# --------------------------------------------------------------------------------------

_NUM_PREFIX = re.compile(rb"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_INT_RE = re.compile(rb"^\s*[+-]?\d+\s*$")
BOOL_OID = 16


def _to_int(b: bytes, oid: int) -> int:
    if oid == BOOL_OID:
        return 1 if b in (b"t", b"true") else 0
    if _INT_RE.match(b):
        v = int(b)
    else:
        m = _NUM_PREFIX.match(b)
        if m is None:
            low = b.strip().lower()
            if low in (b"infinity", b"+infinity", b"inf"):
                v = 2**63 - 1
            elif low in (b"-infinity", b"-inf"):
                v = -2**63
            else:
                v = 0
        else:
            f = float(m.group(1))
            v = int(f) if abs(f) < 2**63 else (2**63 - 1 if f > 0 else -2**63)
    v = max(-2**63, min(2**63 - 1, v))
    return ((v + 2**31) % 2**32) - 2**31  # (int) of an int64, as sqlite3_column_int


def _to_real(b: bytes, oid: int) -> str:
    if oid == BOOL_OID:
        f = 1.0 if b in (b"t", b"true") else 0.0
    else:
        m = _NUM_PREFIX.match(b)
        if m is not None:
            f = float(m.group(1))
        else:
            low = b.strip().lower()
            f = {b"infinity": float("inf"), b"-infinity": float("-inf"),
                 b"nan": float("nan")}.get(low, 0.0)
    return "%.3f" % f


_PRINTABLE = bytes(c if 32 <= c <= 126 else 64 for c in range(256))


def format_value(b: bytes | None, oid: int, t: str) -> str:
    if b is None:
        return "NULL"
    if t == "I":
        return str(_to_int(b, oid))
    if t == "R":
        return _to_real(b, oid)
    if b == b"":
        return "(empty)"
    return b.translate(_PRINTABLE).decode("ascii")


def sort_values(vals: list[str], types: str, mode: str) -> list[str]:
    if mode == "rowsort":
        nc = max(1, len(types))
        rows = [vals[i:i + nc] for i in range(0, len(vals), nc)]
        rows.sort()
        return [v for r in rows for v in r]
    if mode == "valuesort":
        return sorted(vals)
    return vals


def hash_line(vals: list[str]) -> str:
    h = hashlib.md5()
    for v in vals:
        h.update(v.encode("utf-8", errors="surrogateescape"))
        h.update(b"\n")
    return "%d values hashing to %s" % (len(vals), h.hexdigest())


def matches_expected(vals: list[str], rec: Record, threshold: int) -> bool:
    """sqllogictest.c's verify mode: hash compare if over the threshold, else line by line."""
    if threshold > 0 and len(vals) > threshold:
        return len(rec.expected) >= 1 and rec.expected[0] == hash_line(vals)
    return vals == rec.expected


# --------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_connectable(port: int, proc: subprocess.Popen | None, secs: float = 30.0) -> None:
    deadline = time.time() + secs
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited with %s while starting" % proc.returncode)
        try:
            with psycopg.connect(host="127.0.0.1", port=port, user="postgres",
                                 dbname="postgres", connect_timeout=2) as c:
                c.execute("SELECT 1")
            return
        except psycopg.Error:
            time.sleep(0.05)
    raise RuntimeError("server on port %d did not accept connections in %ss" % (port, secs))


class Postgres:
    def __init__(self, bindir: str, workdir: str):
        self.bindir = bindir
        self.dir = os.path.join(workdir, "pg")
        os.makedirs(self.dir)
        shutil.chown(self.dir, "postgres", "postgres")
        os.chmod(self.dir, 0o700)
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.started = False

    def _su(self, cmd: str) -> None:
        r = subprocess.run(["su", "postgres", "-c", cmd], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError("as postgres: %s\n%s" % (cmd, r.stdout[-2000:]))

    def start(self) -> None:
        b = self.bindir
        self._su("%s/initdb -D %s -U postgres --auth=trust -E UTF8 --locale=C >/dev/null"
                 % (b, self.data))
        opts = ("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                "-c max_connections=20" % (self.port, self.dir))
        self.started = True
        self._su("%s/pg_ctl -D %s -l %s/log -w -t 60 -o '%s' start >/dev/null"
                 % (b, self.data, self.dir, opts))
        wait_connectable(self.port, None)

    def pid(self) -> int | None:
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        pid = self.pid()
        r = subprocess.run(["su", "postgres", "-c", "%s/pg_ctl -D %s -m immediate -w stop"
                            % (self.bindir, self.data)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode != 0 and pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def connect(self, dbname: str) -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                               dbname=dbname, autocommit=True, prepare_threshold=None)

    def fresh_db(self) -> psycopg.Connection:
        with self.connect("postgres") as admin:
            admin.execute("DROP DATABASE IF EXISTS slt WITH (FORCE)")
            admin.execute("CREATE DATABASE slt TEMPLATE template0")
        return self.connect("slt")


class Permafrost:
    def __init__(self, binary: str, workdir: str, extra_args: list[str]):
        self.binary = binary
        self.workdir = workdir
        self.extra = extra_args
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.n = 0
        self.log = ""
        self.logf = None

    def start(self, fresh: bool = True) -> None:
        self.stop()
        self.n += 1
        self.port = free_port()
        ddir = os.path.join(self.workdir, "pfdata")
        if fresh and os.path.exists(ddir):
            shutil.rmtree(ddir)
        self.log = os.path.join(self.workdir, "pf-%d.log" % self.n)
        self.logf = open(self.log, "wb")
        cmd = [self.binary, "serve", "--listen", "127.0.0.1:%d" % self.port,
               "--data-dir", ddir, "--metrics-listen", "off"] + self.extra
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.logf,
                                     stderr=subprocess.STDOUT)
        wait_connectable(self.port, self.proc)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        if self.logf is not None:
            self.logf.close()
            self.logf = None
            try:  # keep only logs that say something beyond the start banner
                with open(self.log, "rb") as f:
                    data = f.read()
                if b"panick" not in data and b"rror" not in data:
                    os.unlink(self.log)
            except OSError:
                pass

    def log_tail(self, nbytes: int = 4000) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - nbytes))
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                               dbname="postgres", autocommit=True, prepare_threshold=None,
                               connect_timeout=10)


# --------------------------------------------------------------------------------------
# Running one SQL text with a timeout
# --------------------------------------------------------------------------------------

class Watchdog:
    """One thread: cancels a statement that runs past `timeout`, and calls `on_hang` (which
    kills the server) if it still runs `grace` seconds later."""

    def __init__(self, timeout: float, grace: float):
        self.timeout = timeout
        self.grace = grace
        self.lock = threading.Lock()
        self.conn = None
        self.start = 0.0
        self.cancelled = False
        self.on_hang = None
        self.hung = False
        t = threading.Thread(target=self._run, daemon=True)
        t.start()

    def arm(self, conn, on_hang) -> None:
        with self.lock:
            self.conn, self.start, self.on_hang = conn, time.monotonic(), on_hang
            self.cancelled = self.hung = False

    def disarm(self) -> tuple[bool, bool]:
        with self.lock:
            self.conn = None
            return self.cancelled, self.hung

    def _run(self) -> None:
        while True:
            time.sleep(0.2)
            with self.lock:
                conn, start, on_hang = self.conn, self.start, self.on_hang
                cancelled = self.cancelled
            if conn is None:
                continue
            el = time.monotonic() - start
            if el > self.timeout and not cancelled:
                with self.lock:
                    if self.conn is not conn:
                        continue
                    self.cancelled = True
                try:
                    conn.cancel_safe(timeout=3.0)
                except Exception:
                    pass
            elif el > self.timeout + self.grace and cancelled:
                with self.lock:
                    if self.conn is not conn or self.hung:
                        continue
                    self.hung = True
                if on_hang is not None:
                    on_hang()


@dataclass
class Outcome:
    ok: bool
    values: list | None = None    # list of (bytes|None, oid) rows, for queries
    ncols: int = 0
    sqlstate: str = ""
    message: str = ""
    timeout: bool = False
    lost: bool = False            # connection lost (server died or closed it)
    secs: float = 0.0


def execute(conn, sql: str, want_rows: bool, wd: Watchdog, on_hang=None) -> Outcome:
    t0 = time.monotonic()
    wd.arm(conn, on_hang)
    try:
        cur = conn.cursor()
        cur.execute(sql)
        out = Outcome(ok=True)
        if want_rows:
            res = cur.pgresult
            if res is not None and cur.description is not None:
                nf, nt = res.nfields, res.ntuples
                oids = [res.ftype(c) for c in range(nf)]
                out.ncols = nf
                out.values = [[(res.get_value(r, c), oids[c]) for c in range(nf)]
                              for r in range(nt)]
            else:
                out.values = []
        cur.close()
    except psycopg.Error as e:
        msg = str(e).strip().split("\n")[0] if str(e).strip() else type(e).__name__
        out = Outcome(ok=False, sqlstate=getattr(e, "sqlstate", None) or "", message=msg)
        if conn.broken or conn.closed or isinstance(e, psycopg.OperationalError) and not out.sqlstate:
            out.lost = True
    finally:
        cancelled, hung = wd.disarm()
    if cancelled or hung or (not out.ok and out.sqlstate == "57014"):
        out.timeout = True
    out.secs = time.monotonic() - t0
    return out


# --------------------------------------------------------------------------------------
# Classification and bookkeeping
# --------------------------------------------------------------------------------------

def _collapse_subqueries(s: str) -> str:
    """Replace every parenthesized (SELECT ...) by (SELECT …)."""
    out, i = [], 0
    while True:
        m = re.compile(r"\(\s*SELECT\b", re.I).search(s, i)
        if m is None:
            out.append(s[i:])
            return "".join(out)
        out.append(s[i:m.start()])
        depth, j = 0, m.start()
        while j < len(s):
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.append("(SELECT …)")
        i = j + 1


_KEEP_WORDS = {"int2", "int4", "int8", "float4", "float8", "md5", "utf8", "sha256"}


def normalize_message(msg: str) -> str:
    """Group messages that differ only in names, numbers, literals and subquery bodies."""
    m = msg
    m = re.sub(r'"[^"]*"', '"?"', m)
    m = re.sub(r"'[^']*'", "'?'", m)
    m = _collapse_subqueries(m)
    m = re.sub(r"\b[A-Za-z_]\w*\d\w*\b",
               lambda x: x.group(0) if x.group(0).lower() in _KEEP_WORDS else "?", m)
    m = re.sub(r"\b\d+(\.\d+)?([eE][+-]?\d+)?\b", "N", m)
    m = re.sub(r"\s+", " ", m).strip()
    # "not supported: expression <expr>": keep the shape of the expression only
    e = re.match(r"^(not supported: expression )(.*)$", m)
    if e:
        x = e.group(2)
        x = re.sub(r"^(?:\?|N|'\?'|NULL|[a-z]\.\?|\?\.\?|[a-z])\s+(NOT\s+)?IN\s+\(SELECT …\)$",
                   lambda y: "x %sIN (SELECT …)" % (y.group(1) or ""), x)
        m = e.group(1) + x
    if len(m) > 160:
        m = m[:157] + "..."
    return m


def describe_wrong(pf_vals: list[str], pg_vals: list[str], sort: str) -> str:
    if len(pf_vals) != len(pg_vals):
        return "wrong result: different number of values"
    if sort == "nosort" and sorted(pf_vals) == sorted(pg_vals):
        return "wrong result: same values, different order"
    for a, b in zip(pg_vals, pf_vals):
        if a != b:
            if a == "NULL":
                return "wrong result: value where PostgreSQL gives NULL"
            if b == "NULL":
                return "wrong result: NULL where PostgreSQL gives a value"
            if _NUM_PREFIX.match(a.encode()) and _NUM_PREFIX.match(b.encode()):
                try:
                    fa, fb = float(a), float(b)
                    if fa == fb:
                        return "wrong result: same number, other text form"
                except ValueError:
                    pass
                return "wrong result: different number"
            return "wrong result: different text"
    return "wrong result: hash mismatch"


def short(vals: list[str], n: int = 12) -> str:
    s = " ".join(vals[:n])
    if len(vals) > n:
        s += " ... (%d values)" % len(vals)
    return s


@dataclass
class FileStats:
    path: str
    records: int = 0
    q_total: int = 0         # query records run on PostgreSQL
    q_valid: int = 0         # ... that PostgreSQL answered as expected
    q_pass: int = 0
    q_wrong: int = 0
    q_error: int = 0
    q_timeout: int = 0
    q_lost: int = 0
    s_total: int = 0
    s_valid: int = 0
    s_pass: int = 0
    s_fail: int = 0
    restarts: int = 0
    aborted: str = ""
    secs: float = 0.0


class Runner:
    def __init__(self, args, pg: Postgres, pf: Permafrost, failures_out):
        self.args = args
        self.pg = pg
        self.pf = pf
        self.wd = Watchdog(args.timeout, args.grace)
        self.classes: dict[tuple, dict] = {}
        self.failures_out = failures_out
        self.crash_logs: list[str] = []

    # ----- failure classes
    def add_failure(self, kind: str, sqlstate: str, message: str, path: str, rec: Record,
                    detail: str = "") -> None:
        key = (kind, sqlstate, normalize_message(message) if message else "")
        c = self.classes.get(key)
        if c is None:
            c = self.classes[key] = {"count": 0, "files": set(), "example": None}
        c["count"] += 1
        c["files"].add(path)
        if c["example"] is None:
            c["example"] = {"file": path, "line": rec.line, "sql": rec.sql,
                            "message": message, "detail": detail}
        if self.failures_out is not None:
            self.failures_out.write(json.dumps({
                "file": path, "line": rec.line, "kind": kind, "sqlstate": sqlstate,
                "message": message, "sql": rec.sql, "detail": detail}) + "\n")

    # ----- Permafrost connection management
    def pf_restart(self, st: FileStats, replay: list[str]) -> bool:
        """Restart Permafrost with an empty data dir and replay the statements it had taken
        in this file. False if it cannot be brought back."""
        st.restarts += 1
        if st.restarts > self.args.max_restarts:
            st.aborted = "more than %d Permafrost restarts" % self.args.max_restarts
            return False
        try:
            self.pf.start(fresh=True)
            self.pfc = self.pf.connect()
            self._pf_session_setup()
        except Exception as e:  # noqa: BLE001
            st.aborted = "Permafrost did not restart: %s" % e
            return False
        for sql in replay:
            o = execute(self.pfc, sql, False, self.wd, self.pf.kill)
            if o.lost or o.timeout:
                st.aborted = "Permafrost lost again while replaying the file's statements"
                return False
        return True

    def _pf_session_setup(self) -> None:
        try:
            self.pfc.execute("SET statement_timeout = %d" % int(self.args.timeout * 1000))
        except psycopg.Error:
            pass

    def crash_message(self) -> str:
        if self.pf.proc is not None:
            try:  # a server that is dying may not be reaped yet
                self.pf.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        tail = self.pf.log_tail()
        for ln in tail.splitlines():
            if "panicked" in ln:
                return ln.strip()
        if not self.pf.alive():
            rc = self.pf.proc.returncode if self.pf.proc else None
            if rc is not None and rc < 0:
                return "server killed by signal %d" % -rc
            return "server exited with status %s" % rc
        return "connection closed by the server (server still running)"

    # ----- one file
    def run_file(self, path: str) -> FileStats:
        st = FileStats(path)
        t0 = time.monotonic()
        try:
            records = parse_file(path)
        except Exception as e:  # noqa: BLE001
            st.aborted = "parse error: %s" % e
            return st
        self.pgc = self.pg.fresh_db()
        self.pgc.execute("SET statement_timeout = %d" % int(self.args.timeout * 1000))
        self.pf.start(fresh=True)
        self.pfc = self.pf.connect()
        self._pf_session_setup()
        replay: list[str] = []
        threshold = DEFAULT_HASH_THRESHOLD
        nq = 0
        try:
            for rec in records:
                if rec.kind == "hash-threshold":
                    try:
                        threshold = int(rec.arg)
                    except ValueError:
                        threshold = 0
                    continue
                if rec.kind == "halt":
                    break
                if rec.kind == "unknown":
                    st.aborted = "unknown record type %r at line %d" % (rec.arg, rec.line)
                    break
                if rec.kind == "query":
                    if self.args.limit_per_file and nq >= self.args.limit_per_file:
                        st.aborted = "stopped at --limit-per-file %d" % self.args.limit_per_file
                        break
                    nq += 1
                st.records += 1
                if not self.run_record(rec, st, path, threshold, replay):
                    break
        finally:
            try:
                self.pgc.close()
            except Exception:  # noqa: BLE001
                pass
            try:
                self.pfc.close()
            except Exception:  # noqa: BLE001
                pass
            self.pf.stop()
        st.secs = time.monotonic() - t0
        return st

    def run_record(self, rec: Record, st: FileStats, path: str, threshold: int,
                   replay: list[str]) -> bool:
        is_q = rec.kind == "query"
        pg = execute(self.pgc, rec.sql, is_q, self.wd)
        if pg.lost:
            raise RuntimeError("PostgreSQL connection lost at %s:%d: %s"
                               % (path, rec.line, pg.message))
        # Does PostgreSQL answer as the file expects?
        pg_vals: list[str] = []
        if is_q:
            st.q_total += 1
            valid = pg.ok and pg.ncols == len(rec.types)
            if valid:
                pg_vals = self.format(pg, rec)
                valid = matches_expected(pg_vals, rec, threshold)
        else:
            st.s_total += 1
            valid = pg.ok == rec.expect_ok
        # Statements go to Permafrost in any case (same database state on both sides);
        # queries only if they count.
        if is_q and not valid:
            return True
        pf = execute(self.pfc, rec.sql, is_q, self.wd, self.pf.kill)
        if not is_q and pf.ok:
            replay.append(rec.sql)
        if pf.lost or (not self.pf.alive()):
            msg = self.crash_message()
            if pf.timeout:
                kind, msg = "timeout", "no answer in %gs (cancel ignored; server killed)" % (
                    self.args.timeout + self.args.grace)
            else:
                kind = "lost connection / server crash"
                self.crash_logs.append("%s:%d\n%s" % (path, rec.line, self.pf.log_tail(2500)))
            if valid:
                if is_q:
                    st.q_valid += 1
                    st.q_lost += 1 if kind != "timeout" else 0
                    st.q_timeout += 1 if kind == "timeout" else 0
                else:
                    st.s_valid += 1
                    st.s_fail += 1
                self.add_failure(kind if is_q else "statement: " + kind, "", msg, path, rec)
            return self.pf_restart(st, replay)
        if not valid:  # a statement PostgreSQL did not take as expected
            return True
        if not is_q:
            st.s_valid += 1
            if pf.ok == rec.expect_ok:
                st.s_pass += 1
            else:
                st.s_fail += 1
                if pf.ok:
                    self.add_failure("statement: succeeds, error expected", "", "", path, rec)
                elif pf.timeout:
                    self.add_failure("statement: timeout", pf.sqlstate, pf.message, path, rec)
                else:
                    self.add_failure("statement: error", pf.sqlstate, pf.message, path, rec)
            return True
        st.q_valid += 1
        if not pf.ok:
            if pf.timeout:
                st.q_timeout += 1
                self.add_failure("timeout", pf.sqlstate, "cancelled after %gs" % self.args.timeout,
                                 path, rec)
            else:
                st.q_error += 1
                kind = "query: error"
                if pf.sqlstate == "42P01" and st.s_fail > 0:
                    kind = "query: error after a failed statement"
                self.add_failure(kind, pf.sqlstate, pf.message, path, rec)
            return True
        if pf.ncols != len(rec.types):
            st.q_wrong += 1
            self.add_failure("wrong result: wrong number of columns", "",
                             "%d columns, %d expected" % (pf.ncols, len(rec.types)), path, rec)
            return True
        pf_vals = self.format(pf, rec)
        if matches_expected(pf_vals, rec, threshold):
            st.q_pass += 1
            return True
        st.q_wrong += 1
        pf_types = sorted({o for row in (pf.values or [])[:1] for _, o in row})
        pg_types = sorted({o for row in (pg.values or [])[:1] for _, o in row})
        detail = "PostgreSQL: %s\nPermafrost: %s" % (short(pg_vals), short(pf_vals))
        if pf_types != pg_types:
            detail += "\ncolumn type oids: PostgreSQL %s, Permafrost %s" % (pg_types, pf_types)
        self.add_failure(describe_wrong(pf_vals, pg_vals, rec.sort), "", "", path, rec, detail)
        return True

    @staticmethod
    def format(o: Outcome, rec: Record) -> list[str]:
        vals = [format_value(b, oid, rec.types[i]) for row in (o.values or [])
                for i, (b, oid) in enumerate(row)]
        return sort_values(vals, rec.types, rec.sort)


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------

def pct(a: int, b: int) -> str:
    return "%.1f%%" % (100.0 * a / b) if b else "n/a"


def md_code(s: str, limit: int = 600) -> str:
    if len(s) > limit:
        s = s[:limit] + " ..."
    return "```sql\n" + s.replace("```", "` ` `") + "\n```"


def write_report(out: str, args, stats: list[FileStats], runner: Runner, wall: float,
                 common: str) -> None:
    T = lambda attr: sum(getattr(s, attr) for s in stats)  # noqa: E731
    L = []
    L.append("# Differential sqllogictest report: Permafrost vs PostgreSQL 15\n")
    L.append("- Permafrost binary: `%s` (extra args: `%s`)" % (args.permafrost,
                                                           " ".join(runner.pf.extra)))
    L.append("- PostgreSQL: `%s`" % args.pg_bin)
    L.append("- Files: %d; limit per file: %s; statement timeout %gs; wall time %.0f s"
             % (len(stats), args.limit_per_file or "none", args.timeout, wall))
    L.append("- A record counts only if PostgreSQL answers it as the file expects "
             "(we are `%s` for skipif/onlyif).\n" % ENGINE)
    L.append("## Overall\n")
    qv, qp = T("q_valid"), T("q_pass")
    L.append("| | count |\n|---|---:|")
    L.append("| query records run on PostgreSQL | %d |" % T("q_total"))
    L.append("| ... answered as expected by PostgreSQL (counted) | %d |" % qv)
    L.append("| Permafrost pass | %d (**%s**) |" % (qp, pct(qp, qv)))
    L.append("| Permafrost wrong result | %d |" % T("q_wrong"))
    L.append("| Permafrost error | %d |" % T("q_error"))
    L.append("| Permafrost timeout | %d |" % T("q_timeout"))
    L.append("| Permafrost lost connection / crash | %d |" % T("q_lost"))
    L.append("| statements run | %d |" % T("s_total"))
    L.append("| ... as expected by PostgreSQL (counted) | %d |" % T("s_valid"))
    L.append("| statements Permafrost handles as expected | %d (%s) |"
             % (T("s_pass"), pct(T("s_pass"), T("s_valid"))))
    L.append("| statements Permafrost fails | %d |" % T("s_fail"))
    L.append("| Permafrost restarts after a crash/hang | %d |\n" % T("restarts"))

    # per directory
    groups: dict[str, list[FileStats]] = collections.OrderedDict()
    for s in stats:
        rel = os.path.relpath(s.path, common) if common else s.path
        groups.setdefault(os.path.dirname(rel) or ".", []).append(s)
    if len(groups) > 1:
        L.append("## Per folder\n")
        L.append("| folder | files | queries counted | pass | pass % | wrong | error | "
                 "timeout | crash | stmts failed |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for g, ss in groups.items():
            S = lambda a: sum(getattr(x, a) for x in ss)  # noqa: E731
            L.append("| %s | %d | %d | %d | %s | %d | %d | %d | %d | %d |" % (
                g, len(ss), S("q_valid"), S("q_pass"), pct(S("q_pass"), S("q_valid")),
                S("q_wrong"), S("q_error"), S("q_timeout"), S("q_lost"), S("s_fail")))
        L.append("")
    L.append("## Per file\n")
    L.append("| file | queries counted / run | pass | pass % | wrong | error | timeout | "
             "crash | stmts failed / counted | restarts | secs | note |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for s in stats:
        rel = os.path.relpath(s.path, common) if common else s.path
        L.append("| %s | %d / %d | %d | %s | %d | %d | %d | %d | %d / %d | %d | %.0f | %s |" % (
            rel, s.q_valid, s.q_total, s.q_pass, pct(s.q_pass, s.q_valid), s.q_wrong,
            s.q_error, s.q_timeout, s.q_lost, s.s_fail, s.s_valid, s.restarts, s.secs,
            s.aborted))
    L.append("")
    L.append("## Failure classes\n")
    L.append("Grouped by kind + SQLSTATE + message with quoted names, table/column names "
             "and numbers replaced. Counts include queries that fail only because an earlier "
             "statement failed.\n")
    classes = sorted(runner.classes.items(), key=lambda kv: -kv[1]["count"])
    L.append("| # | count | files | kind | SQLSTATE | message |")
    L.append("|---:|---:|---:|---|---|---|")
    for i, ((kind, code, msg), c) in enumerate(classes, 1):
        L.append("| %d | %d | %d | %s | %s | %s |" % (
            i, c["count"], len(c["files"]), kind, code or "", msg.replace("|", "\\|")))
    L.append("")
    L.append("### Examples\n")
    for i, ((kind, code, msg), c) in enumerate(classes[:args.examples], 1):
        ex = c["example"]
        rel = os.path.relpath(ex["file"], common) if common else ex["file"]
        L.append("**%d. %s** (%d)  " % (i, " ".join(x for x in (kind, code, msg) if x),
                                         c["count"]))
        L.append("`%s:%d`%s\n" % (rel, ex["line"],
                                  (" — " + ex["message"]) if ex["message"] else ""))
        L.append(md_code(ex["sql"]))
        if ex["detail"]:
            L.append("```\n%s\n```" % ex["detail"][:1500])
        L.append("")
    if runner.crash_logs:
        L.append("## Server log tails at crashes (first 5)\n")
        for t in runner.crash_logs[:5]:
            L.append("```\n%s\n```\n" % t[-2500:])
    with open(out, "w") as f:
        f.write("\n".join(L) + "\n")


# --------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--permafrost", required=True, help="Permafrost server binary")
    ap.add_argument("--files", nargs="+", required=True, help="sqllogictest .test files")
    ap.add_argument("--limit-per-file", type=int, default=0,
                    help="run at most N query records per file (0: all)")
    ap.add_argument("--report", help="write the markdown report here")
    ap.add_argument("--failures", help="write every failure as JSON lines here")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds per statement before it is cancelled (default 10)")
    ap.add_argument("--grace", type=float, default=5.0,
                    help="seconds after a cancel before the Permafrost server is killed")
    ap.add_argument("--max-restarts", type=int, default=20,
                    help="Permafrost restarts allowed per file before the file is abandoned")
    ap.add_argument("--pg-bin", default=PG_BIN_DEFAULT)
    ap.add_argument("--permafrost-arg", action="append", default=None,
                    help="extra argument for `serve` (repeatable; default: --command-log off "
                         "--log-client-errors off)")
    ap.add_argument("--examples", type=int, default=25, help="failure classes shown with an example")
    args = ap.parse_args()

    extra = args.permafrost_arg if args.permafrost_arg is not None else [
        "--command-log", "off", "--log-client-errors", "off"]
    work = tempfile.mkdtemp(prefix="slt-diff-")
    os.chmod(work, 0o755)
    pg = Postgres(args.pg_bin, work)
    pf = Permafrost(os.path.abspath(args.permafrost), work, extra)

    def cleanup():
        pf.stop()
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)

    atexit.register(cleanup)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

    pg.start()
    failures_out = open(args.failures, "w") if args.failures else None
    runner = Runner(args, pg, pf, failures_out)
    files = [os.path.abspath(f) for f in args.files]
    common = os.path.commonpath(files) if len(files) > 1 else os.path.dirname(files[0])
    stats: list[FileStats] = []
    t0 = time.monotonic()
    for i, path in enumerate(files, 1):
        st = runner.run_file(path)
        stats.append(st)
        rel = os.path.relpath(path, common)
        print("[%d/%d] %s: %d/%d queries pass (%s), %d wrong, %d error, %d timeout, "
              "%d crash; %d/%d statements fail; %.0fs%s" % (
                  i, len(files), rel, st.q_pass, st.q_valid, pct(st.q_pass, st.q_valid),
                  st.q_wrong, st.q_error, st.q_timeout, st.q_lost, st.s_fail, st.s_valid,
                  st.secs, (" [" + st.aborted + "]") if st.aborted else ""), flush=True)
        if args.report and (i % 10 == 0 or i == len(files)):
            write_report(args.report, args, stats, runner, time.monotonic() - t0, common)
    wall = time.monotonic() - t0
    if failures_out:
        failures_out.close()
    qv = sum(s.q_valid for s in stats)
    qp = sum(s.q_pass for s in stats)
    print("\nTOTAL: Permafrost passes %d of %d queries PostgreSQL answers correctly (%s); "
          "%d of %d statements fail on Permafrost; %d files, %.0f s"
          % (qp, qv, pct(qp, qv), sum(s.s_fail for s in stats),
             sum(s.s_valid for s in stats), len(stats), wall))
    print("Top failure classes:")
    for (kind, code, msg), c in sorted(runner.classes.items(), key=lambda kv: -kv[1]["count"])[:10]:
        print("  %6d  %s %s %s" % (c["count"], kind, code, msg))
    if args.report:
        write_report(args.report, args, stats, runner, wall, common)
        print("report: %s" % args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
