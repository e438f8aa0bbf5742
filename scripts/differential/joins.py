#!/usr/bin/env python3
"""Random joins, run against Permafrost and PostgreSQL 15 side by side; prints every query
whose answers differ.

The queries join two to six of four small tables (NULLs and duplicate keys included) with
inner, LEFT, RIGHT and CROSS joins nested any way, tables or subqueries in FROM (`a LEFT JOIN (b JOIN c ON ...) ON ...`,
`a JOIN b ON ... RIGHT JOIN c ON ...`), LATERAL subqueries holding a join's condition
(`a LEFT JOIN LATERAL (SELECT * FROM t WHERE p [ORDER BY ... LIMIT n]) t ON true`), ON conditions over either side, WHERE conditions
that read null-extended columns (`IS NULL`, OR), and sometimes an aggregate over the join.
Rows are compared as multisets; errors by SQLSTATE.

    python3 scripts/differential/joins.py --permafrost 'host=127.0.0.1 port=55434 user=u' \
        --postgres 'host=127.0.0.1 port=55433 user=postgres' --seed 1 --queries 2000

Needs psycopg 3 (`pip install 'psycopg[binary]'`). Both databases get the tables `dj1` to
`dj4`, dropped and made again.
"""

import random
import sys

import psycopg

from common import answer, arguments

TABLES = ["dj1", "dj2", "dj3", "dj4"]
COLS = ["id", "x", "y"]


def setup(conn, rng):
    with conn.cursor() as cur:
        for t in TABLES:
            cur.execute(f"DROP TABLE IF EXISTS {t}")
            cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, x INT, y INT)")
        cur.execute("CREATE INDEX dj2_x ON dj2 (x)")
        cur.execute("CREATE INDEX dj3_y ON dj3 (y)")
    conn.commit()


def rows_for(rng):
    data = {}
    for t in TABLES:
        n = rng.randint(0, 9)
        rows = []
        for i in range(n):
            x = rng.choice([None, 0, 1, 2, 3, 4])
            y = rng.choice([None, 0, 1, 2, 3, 4, 5])
            rows.append((i + 1, x, y))
        data[t] = rows
    return data


def load(conn, data):
    with conn.cursor() as cur:
        for t, rows in data.items():
            cur.execute(f"DELETE FROM {t}")
            for r in rows:
                cur.execute(f"INSERT INTO {t} VALUES (%s, %s, %s)", r)
    conn.commit()


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.n = 0

    def alias(self):
        self.n += 1
        return f"a{self.n}"

    def cond(self, left, right):
        """An ON condition over aliases `left` and `right` (each side's)."""
        r = self.rng
        la, ra = r.choice(left), r.choice(right)
        parts = [f"{la}.{r.choice(COLS)} = {ra}.{r.choice(COLS)}"]
        k = r.random()
        if k < 0.2:
            parts.append(f"{ra}.{r.choice(COLS)} > {r.randint(0, 3)}")
        elif k < 0.3:
            parts.append(f"{la}.{r.choice(COLS)} < {r.randint(1, 4)}")
        elif k < 0.4:
            parts = [f"({parts[0]} OR {ra}.{r.choice(COLS)} IS NULL)"]
        elif k < 0.45:
            parts = ["true"]
        elif k < 0.5:
            parts.append(f"{la}.{r.choice(COLS)} = {r.choice(right)}.{r.choice(COLS)}")
        return " AND ".join(parts)

    def tree(self, n):
        """A join of `n` tables: its text and its aliases."""
        r = self.rng
        if n == 1:
            a = self.alias()
            k = r.random()
            if k < 0.1:
                # A subquery in FROM (pulled up into the query, or into its null-extended
                # group, when it gives its tables' columns as they are).
                return f"(SELECT id, x, y FROM {r.choice(TABLES)} WHERE y <> {r.randint(0, 4)}) {a}", [a]
            if k < 0.15:
                t, u = r.choice(TABLES), r.choice(TABLES)
                return f"(SELECT t.id, t.x, u.y FROM {t} t JOIN {u} u ON u.x = t.id) {a}", [a]
            if k < 0.18:
                return f"(SELECT id, x + 1 AS x, coalesce(y, 7) AS y FROM {r.choice(TABLES)}) {a}", [a]
            return f"{r.choice(TABLES)} {a}", [a]
        k = r.randint(1, n - 1)
        lt, la = self.tree(k)
        rt, ra = self.tree(n - k)
        if n - k > 1:
            rt = f"({rt})"
        if k > 1 and r.random() < 0.3:
            lt = f"({lt})"
        kind = r.choices(["JOIN", "LEFT JOIN", "RIGHT JOIN", "CROSS JOIN", "FULL JOIN"], [3, 4, 2, 1, 1])[0]
        if kind == "CROSS JOIN":
            return f"{lt} CROSS JOIN {rt}", la + ra
        if kind == "FULL JOIN" and len(la) == 1 and len(ra) == 1 and r.random() < 0.3:
            # Both sides have one `x` (and `id`, `y`), each shown once by an unqualified name.
            return f"{lt} FULL JOIN {rt} USING ({r.choice(['x', 'x, y', 'id'])})", la + ra
        words = rt.split()
        if kind in ("JOIN", "LEFT JOIN") and len(words) == 2 and words[0] in TABLES and r.random() < 0.2:
            # The same join with its condition inside a LATERAL subquery reading the left
            # side (`a JOIN t ON p` is `a JOIN LATERAL (SELECT * FROM t WHERE p) t ON true`),
            # sometimes cut to the first rows of each entry.
            (b,) = ra
            cut = f" ORDER BY {b}.id, {b}.x, {b}.y LIMIT {r.randint(1, 2)}" if r.random() < 0.3 else ""
            sub = f"LATERAL (SELECT * FROM {rt} WHERE {self.cond(la, ra)}{cut}) {b}"
            return f"{lt} {kind} {sub} ON true", la + ra
        return f"{lt} {kind} {rt} ON {self.cond(la, ra)}", la + ra

    def query(self):
        r = self.rng
        self.n = 0
        n = r.choices([2, 3, 4, 5, 6], [2, 4, 4, 2, 1])[0]
        if r.random() < 0.04:
            a, b = self.alias(), self.alias()
            from_, aliases = f"{r.choice(TABLES)} {a} FULL JOIN {r.choice(TABLES)} {b} ON {self.cond([a], [b])}", [a, b]
        else:
            from_, aliases = self.tree(n)
        where = ""
        k = r.random()
        if k < 0.25:
            where = f" WHERE {r.choice(aliases)}.{r.choice(COLS)} IS NULL"
        elif k < 0.4:
            where = f" WHERE {r.choice(aliases)}.{r.choice(COLS)} IS NOT NULL"
        elif k < 0.55:
            where = f" WHERE {r.choice(aliases)}.x = {r.choice(aliases)}.y OR {r.choice(aliases)}.id IS NULL"
        elif k < 0.65:
            where = f" WHERE {r.choice(aliases)}.{r.choice(COLS)} > {r.randint(0, 3)}"
        if r.random() < 0.15:
            g = r.choice(aliases)
            return (
                f"SELECT {g}.x, count(*), count({r.choice(aliases)}.id), sum({r.choice(aliases)}.y) "
                f"FROM {from_}{where} GROUP BY {g}.x"
            )
        cols = ", ".join(f"{a}.{c}" for a in aliases for c in COLS)
        return f"SELECT {cols} FROM {from_}{where}"


def main():
    ap = arguments(__doc__, 1000)
    ap.add_argument("--per-data", type=int, default=50, help="queries per random data set")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    pf = psycopg.connect(args.permafrost)
    pg = psycopg.connect(args.postgres)
    setup(pf, rng)
    setup(pg, rng)
    gen = Gen(rng)
    differ = refused = pg_refused = 0
    for i in range(args.queries):
        if i % args.per_data == 0:
            data = rows_for(rng)
            load(pf, data)
            load(pg, data)
        q = gen.query()
        a, b = answer(pf, q), answer(pg, q)
        if a == b:
            continue
        if a[0] == "error" and a[1] == "0A000" and b[0] == "rows":
            refused += 1
            print(f"refused: {q}")
            continue
        if b == ("error", "0A000") and a[0] == "rows":
            # PostgreSQL runs a FULL JOIN only on conditions it can merge or hash.
            pg_refused += 1
            continue
        differ += 1
        print(f"DIFFER: {q}\n  permafrost: {str(a)[:300]}\n  postgres:   {str(b)[:300]}")
    print(
        f"{args.queries} queries: {differ} differ, {refused} refused (0A000) where PostgreSQL answers, "
        f"{pg_refused} answered where PostgreSQL refuses"
    )
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
