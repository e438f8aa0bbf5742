"""What the differential scripts share: their command line and how an answer is taken."""

import argparse

import psycopg


def arguments(doc, queries):
    """A parser with the connection strings, the seed and the number of queries."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--permafrost", required=True, help="libpq connection string")
    ap.add_argument("--postgres", required=True, help="libpq connection string")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queries", type=int, default=queries)
    return ap


def answer(conn, q):
    """The rows of `q`, sorted (compared as a multiset), or its error's SQLSTATE."""
    try:
        with conn.cursor() as cur:
            cur.execute(q)
            rows = cur.fetchall()
        conn.commit()
        return ("rows", sorted(rows, key=lambda row: tuple((v is None, v) for v in row)))
    except psycopg.Error as e:
        conn.rollback()
        return ("error", e.sqlstate)
