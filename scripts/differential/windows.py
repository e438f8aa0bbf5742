#!/usr/bin/env python3
"""Random window calls over a table larger than a small `work_mem`, run against Permafrost
and PostgreSQL 15 side by side; prints every query whose answers differ.

Each query reads the table `dw` (a few thousand rows of about 120 bytes, NULLs and
repeated values included) with one to three window calls: ranking, offsets, `ntile`,
`percent_rank`, `cume_dist`, value functions and aggregates, over partitions or none,
orders or none, and frames (ROWS, RANGE, GROUPS; offsets, UNBOUNDED, CURRENT ROW). With
`--work-mem 64kB` (the default) Permafrost runs them on disk (exec/window_disk.rs); a
call that must hold a partition larger than its share of `work_mem` answers 54000, which
is counted apart. Calls whose value depends on an order among peers get a unique order
(`..., id`), so both answers are determined. Rows are compared as multisets.

    python3 scripts/differential/windows.py --permafrost 'host=127.0.0.1 port=55434 user=u' \
        --postgres 'host=127.0.0.1 port=55433 user=postgres' --seed 1 --queries 300

Needs psycopg 3 (`pip install 'psycopg[binary]'`). Both databases get the table `dw`,
dropped and made again.
"""

import random
import sys

import psycopg

from common import answer, arguments


def setup(conn, rows):
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS dw")
        cur.execute("CREATE TABLE dw (id INT PRIMARY KEY, g INT, x INT, pad TEXT)")
    conn.commit()
    with conn.cursor() as cur:
        with cur.copy("COPY dw FROM STDIN") as copy:
            for r in rows:
                copy.write_row(r)
    conn.commit()


def rows_for(rng, n):
    return [
        (i, rng.choice([None, 0, 1, 2, 3]), rng.choice([None] + list(range(40))), "p" * rng.randint(80, 120))
        for i in range(n)
    ]


PARTITIONS = ["", "PARTITION BY g", "PARTITION BY x % 3", "PARTITION BY g, x % 2"]
ORDERS = ["", "ORDER BY id", "ORDER BY x", "ORDER BY x DESC NULLS LAST", "ORDER BY g, x", "ORDER BY x NULLS FIRST"]
FRAMES = [
    "",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
    "RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
    "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING",
    "GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW",
    "RANGE BETWEEN 3 PRECEDING AND 2 FOLLOWING",
    "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
]


class Gen:
    def __init__(self, rng):
        self.r = rng

    def call(self):
        r = self.r
        part = r.choice(PARTITIONS)
        order = r.choice(ORDERS)
        kind = r.choice(["rank", "order", "total", "agg", "agg", "value", "offset"])
        frame = ""
        if kind == "rank":
            func = r.choice(["rank()", "dense_rank()", "percent_rank()", "cume_dist()"])
        elif kind == "order":
            func = r.choice(["row_number()", "ntile(3)", "ntile(7)"])
            order = (order + ", id") if order else "ORDER BY id"
        elif kind == "offset":
            func = r.choice(["lag(x)", "lead(x)", "lag(id, 2, -1)", "lead(x, 3)"])
            order = (order + ", id") if order else "ORDER BY id"
        elif kind == "total":
            func = r.choice(["count(*)", "sum(x)", "max(x)", "min(id)", "avg(x)"])
            frame = r.choice(["", "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"])
            order = "" if frame == "" else order
        elif kind == "agg":
            func = r.choice(["count(*)", "count(x)", "sum(x)", "max(x)", "min(x)", "avg(id)"])
            frame = r.choice(FRAMES)
            if frame.startswith("ROWS"):
                order = (order + ", id") if order else "ORDER BY id"
            if frame.startswith("RANGE BETWEEN 3") or frame.startswith("GROUPS"):
                order = r.choice(["ORDER BY x", "ORDER BY id DESC"])
        else:
            func = r.choice(["first_value(id)", "last_value(id)", "nth_value(id, 2)"])
            frame = r.choice(FRAMES)
            order = (order + ", id") if order else "ORDER BY id"
            if frame.startswith("RANGE BETWEEN 3") or frame.startswith("GROUPS"):
                order = "ORDER BY id"
        spec = " ".join(s for s in [part, order, frame] if s)
        return f"{func} OVER ({spec})"

    def query(self):
        r = self.r
        calls = ", ".join(self.call() for _ in range(r.randint(1, 3)))
        where = r.choice(["", "", " WHERE x IS NOT NULL", " WHERE id % 3 <> 0"])
        tail = r.choice(["", " ORDER BY id LIMIT 100", " ORDER BY id DESC LIMIT 20 OFFSET 5"])
        return f"SELECT id, pad, {calls} FROM dw{where}{tail}"


def main():
    ap = arguments(__doc__, 300)
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--work-mem", default="64kB", help="Permafrost's work_mem for the queries")
    ap.add_argument("--show-past", action="store_true", help="print the queries answered 54000")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    pf = psycopg.connect(args.permafrost)
    pg = psycopg.connect(args.postgres)
    rows = rows_for(rng, args.rows)
    setup(pf, rows)
    setup(pg, rows)
    with pf.cursor() as cur:
        cur.execute(f"SET work_mem = '{args.work_mem}'")
    pf.commit()
    gen = Gen(rng)
    differ = too_big = 0
    for _ in range(args.queries):
        q = gen.query()
        a, b = answer(pf, q), answer(pg, q)
        if a == b:
            continue
        if a == ("error", "54000") and b[0] == "rows":
            too_big += 1
            if args.show_past:
                print(f"54000: {q}")
            continue
        differ += 1
        print(f"DIFFER: {q}\n  permafrost: {str(a)[:300]}\n  postgres:   {str(b)[:300]}")
    print(f"{args.queries} queries: {differ} differ, {too_big} past Permafrost's work_mem (54000)")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
