"""psycopg 3 against a running permafrost serve: python3 psycopg_test.py PORT.

Each check runs on its own; a failing one is reported and the others go on. Prints
`psycopg: N passed, M failed` and exits non-zero if any failed.
"""

import datetime
import sys
import traceback
from decimal import Decimal, localcontext

import psycopg
from psycopg import errors

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 5433
DSN = f"host=127.0.0.1 port={PORT} user=permafrost dbname=permafrost connect_timeout=10"
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def connect(**kw):
    # Most checks run each statement on its own; default_mode_transactions checks psycopg's
    # default (autocommit off: a BEGIN before the first statement).
    return psycopg.connect(DSN, autocommit=True, **kw)


def expect_error(conn, cls, sql, params=None):
    """Runs sql, which must fail with cls; returns the error."""
    try:
        conn.execute(sql, params)
    except cls as e:
        return e
    raise AssertionError(f"{sql!r} did not raise {cls.__name__}")


@check
def version_and_settings(conn):
    assert conn.info.server_version >= 100000, conn.info.server_version
    (v,) = conn.execute("SELECT version()").fetchone()
    assert "PostgreSQL" in v or "permafrost" in v.lower(), v
    (enc,) = conn.execute("SHOW client_encoding").fetchone()
    assert enc.upper() == "UTF8", enc


@check
def executemany_insert_with_parameters(conn):
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO py_items (id, name, price, qty) VALUES (%s, %s, %s, %s)",
            [(i, f"item{i}", Decimal(i) / 4, i * 10) for i in range(1, 21)],
        )
    (n,) = conn.execute("SELECT count(*) FROM py_items").fetchone()
    assert n == 20, n


@check
def select_with_parameters_text_results(conn):
    rows = conn.execute(
        "SELECT id, name, price FROM py_items WHERE id BETWEEN %s AND %s ORDER BY id DESC", (3, 5)
    ).fetchall()
    assert rows == [(5, "item5", Decimal("1.25")), (4, "item4", Decimal("1.00")), (3, "item3", Decimal("0.75"))], rows
    row = conn.execute("SELECT name FROM py_items WHERE name = %s", ("item7",)).fetchone()
    assert row == ("item7",), row
    assert conn.execute("SELECT id FROM py_items WHERE id = %s", (999,)).fetchone() is None


@check
def all_types_text_and_binary(conn):
    ts = datetime.datetime(2024, 2, 29, 13, 45, 7, 123456)
    values = (1, 7, 2**40, 2.5, Decimal("123.45"), "héllo\tworld", ts, True, b"\x00\x01\xff", None)
    conn.execute(
        "INSERT INTO py_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", values
    )
    for binary in (False, True):
        with conn.cursor(binary=binary) as cur:
            cur.execute("SELECT * FROM py_types WHERE id = %s", (1,))
            row = cur.fetchone()
            assert row == values, (binary, row)
            assert cur.pgresult.fformat(0) == int(binary), (binary, cur.pgresult.fformat(0))
    # Binary parameters too (%b).
    (name,) = conn.execute("SELECT t FROM py_types WHERE id = %b AND b = %b", (1, b"\x00\x01\xff")).fetchone()
    assert name == "héllo\tworld", name


@check
def dates_and_zoned_timestamps_text_and_binary(conn):
    conn.execute("DROP TABLE IF EXISTS py_dates")
    conn.execute("CREATE TABLE py_dates (id INT PRIMARY KEY, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ)")
    utc = datetime.timezone.utc
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    rows = [
        (1, datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 10, 0, 0, 250000),
         datetime.datetime(2024, 2, 29, 10, 0, tzinfo=plus2)),
        (2, datetime.date(1, 1, 1), datetime.datetime(1999, 12, 31, 23, 59, 59),
         datetime.datetime(2000, 1, 1, tzinfo=utc)),
        (3, None, None, None),
    ]
    try:
        for binary in (False, True):
            conn.execute("DELETE FROM py_dates")
            with conn.cursor(binary=binary) as cur:
                cur.executemany("INSERT INTO py_dates VALUES (%s, %s, %s, %s)", rows)
                cur.execute("SELECT id, d, ts, tz FROM py_dates ORDER BY id")
                got = cur.fetchall()
                # A moment comes back the same, in UTC (the session's zone).
                assert got == rows, (binary, got)
                assert got[0][3].utcoffset() == datetime.timedelta(0), got[0][3]
                cur.execute(
                    "SELECT id FROM py_dates WHERE d = %s AND tz = %s",
                    (datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 8, 0, tzinfo=utc)),
                )
                assert cur.fetchall() == [(1,)]
                cur.execute("SELECT now(), current_date, date_trunc('day', tz), extract(year FROM d) FROM py_dates WHERE id = 1")
                now, today, day, year = cur.fetchone()
                assert now.tzinfo is not None and today == datetime.datetime.now(utc).date(), (now, today)
                assert day == datetime.datetime(2024, 2, 29, tzinfo=utc) and year == 2024, (day, year)
        expect_error(conn, errors.DatetimeFieldOverflow, "SELECT %s::date", ("2023-02-29",))
    finally:
        conn.execute("DROP TABLE IF EXISTS py_dates")


@check
def numeric_of_any_precision_text_and_binary(conn):
    with localcontext() as ctx:
        # Python's own arithmetic keeps 28 digits unless told otherwise.
        ctx.prec = 1100
        numeric_checks(conn)


def numeric_checks(conn):
    conn.execute("DROP TABLE IF EXISTS py_num")
    conn.execute("CREATE TABLE py_num (id BIGINT PRIMARY KEY, v NUMERIC(60, 20), w NUMERIC(1000, 0))")
    try:
        values = [
            Decimal("123456789012345678901234567890.12345678901234567890"),
            Decimal("-0.00000000000000000001"),
            Decimal("0.50"),
            Decimal(0),
        ]
        for i, v in enumerate(values):
            w = Decimal(10) ** 999 - 1 if i == 0 else Decimal(-i)
            # Text parameters, then binary ones (%b).
            q = "INSERT INTO py_num VALUES (%s, %s, %s)" if i % 2 else "INSERT INTO py_num VALUES (%b, %b, %b)"
            conn.execute(q, (i, v, w))
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                cur.execute("SELECT v, w, v * 2, v / 3 FROM py_num ORDER BY id")
                rows = cur.fetchall()
                assert [r[0] for r in rows] == values, (binary, rows)
                assert rows[0][1] == Decimal(10) ** 999 - 1, binary
                assert rows[0][2] == values[0] * 2, (binary, rows[0][2])
                # PostgreSQL's quotient scale: 20 digits after the point here.
                assert rows[0][3] == Decimal("41152263004115226300411522630.04115226300411522630"), (binary, rows[0][3])
                assert str(rows[2][0]) == "0.50000000000000000000", (binary, rows[2][0])
        (n,) = conn.execute("SELECT count(*) FROM py_num WHERE v > %s", (Decimal("-1e-30"),)).fetchone()
        assert n == 3, n
        e = expect_error(conn, errors.NumericValueOutOfRange, "INSERT INTO py_num VALUES (9, %s, 0)", (Decimal("1e40"),))
        assert e.sqlstate == "22003", e.sqlstate
    finally:
        conn.execute("DROP TABLE py_num")


@check
def insert_update_delete_returning(conn):
    row = conn.execute(
        "INSERT INTO py_items (id, name, qty) VALUES (%s, %s, %s) RETURNING id, price, qty", (100, "new", 1)
    ).fetchone()
    assert row == (100, None, 1), row
    cur = conn.execute("UPDATE py_items SET qty = qty + %s WHERE id <= %s", (5, 3))
    assert cur.rowcount == 3, cur.rowcount
    rows = conn.execute("UPDATE py_items SET name = %s WHERE id = %s RETURNING name, qty", ("renamed", 1)).fetchall()
    assert rows == [("renamed", 15)], rows
    cur = conn.execute("DELETE FROM py_items WHERE id > %s", (20,))
    assert cur.rowcount == 1, cur.rowcount
    (n,) = conn.execute("SELECT count(*) FROM py_items").fetchone()
    assert n == 20, n


@check
def aggregates_and_join(conn):
    row = conn.execute(
        "SELECT count(*), sum(qty), min(price), max(name) FROM py_items WHERE id > %s", (10,)
    ).fetchone()
    assert row == (10, sum(i * 10 for i in range(11, 21)), Decimal("2.75"), "item20"), row
    conn.execute("INSERT INTO py_orders VALUES (1, 2), (1, 3), (2, 4), (3, 1)")
    rows = conn.execute(
        "SELECT i.id, sum(o.amount) FROM py_items i JOIN py_orders o ON o.item_id = i.id "
        "GROUP BY i.id HAVING sum(o.amount) > %s ORDER BY i.id",
        (1,),
    ).fetchall()
    assert rows == [(1, 5), (2, 4)], rows


@check
def update_from_and_delete_using_with_parameters(conn):
    conn.execute("CREATE TABLE py_price (item_id BIGINT PRIMARY KEY, bump INTEGER)")
    try:
        before = dict(conn.execute("SELECT id, qty FROM py_items WHERE id <= 3").fetchall())
        conn.execute("INSERT INTO py_price VALUES (1, 5), (2, 7), (3, 9), (999, 1)")
        cur = conn.execute(
            "UPDATE py_items SET qty = qty + p.bump * %s FROM py_price p "
            "WHERE p.item_id = py_items.id AND p.bump > %s RETURNING py_items.id, py_items.qty",
            (2, 6),
        )
        rows = sorted(cur.fetchall())
        assert rows == [(2, before[2] + 14), (3, before[3] + 18)], rows
        # The same, undone in psycopg's default mode (a block).
        with psycopg.connect(DSN) as block:
            block.execute(
                "UPDATE py_items SET qty = qty - p.bump * %s FROM py_price p "
                "WHERE p.item_id = py_items.id AND p.bump > %s",
                (2, 6),
            )
        after = dict(conn.execute("SELECT id, qty FROM py_items WHERE id <= 3").fetchall())
        assert after == before, (after, before)
        cur = conn.execute(
            "DELETE FROM py_price USING py_items i WHERE i.id = py_price.item_id AND i.qty <= %s",
            (before[2],),
        )
        assert cur.rowcount == sum(1 for q in before.values() if q <= before[2]), cur.rowcount
        (left,) = conn.execute("SELECT count(*) FROM py_price").fetchone()
        assert left == 4 - cur.rowcount, left
    finally:
        conn.execute("DROP TABLE py_price")


@check
def copy_from_stdin(conn):
    with conn.cursor() as cur:
        with cur.copy("COPY py_orders (item_id, amount) FROM STDIN") as copy:
            for i in range(1000):
                copy.write_row((i % 20 + 1, i))
        assert cur.rowcount == 1000, cur.rowcount
        with cur.copy("COPY py_orders FROM STDIN WITH (FORMAT csv)") as copy:
            copy.write("5,1000\n5,1001\n")
    (n, s) = conn.execute("SELECT count(*), sum(amount) FROM py_orders WHERE item_id = %s", (5,)).fetchone()
    assert (n, s) == (52, sum(range(4, 1000, 20)) + 2001), (n, s)
    with conn.cursor() as cur:
        with cur.copy("COPY (SELECT amount FROM py_orders WHERE item_id = 5 ORDER BY amount) TO STDOUT") as copy:
            got = [int(r[0]) for r in copy.rows()]
    assert got == list(range(4, 1000, 20)) + [1000, 1001], got


@check
def procedure_create_and_call(conn):
    conn.execute(
        """CREATE PROCEDURE py_move(src BIGINT, dst BIGINT, n INTEGER) LANGUAGE SQL AS $$
             UPDATE py_items SET qty = qty - $3 WHERE id = $1;
             UPDATE py_items SET qty = qty + $3 WHERE id = $2;
             SELECT id, qty FROM py_items WHERE id IN ($1, $2) ORDER BY id
           $$"""
    )
    rows = conn.execute("CALL py_move(%s, %s, %s)", (10, 11, 50)).fetchall()
    assert rows == [(10, 50), (11, 160)], rows
    rows = conn.execute("CALL py_move(11, 10, 10)").fetchall()  # no parameters: simple protocol
    assert rows == [(10, 60), (11, 150)], rows
    e = expect_error(conn, errors.UndefinedFunction, "CALL py_nope(%s)", (1,))
    assert e.sqlstate == "42883", e.sqlstate


@check
def errors_have_sqlstate_and_connection_goes_on(conn):
    cases = [
        (errors.SyntaxError, "SELEC 1", None, "42601"),
        (errors.UndefinedTable, "SELECT * FROM py_nope WHERE id = %s", (1,), "42P01"),
        (errors.UniqueViolation, "INSERT INTO py_items (id, name) VALUES (%s, %s)", (1, "dup"), "23505"),
        (errors.NoActiveSqlTransaction, "SAVEPOINT a", None, "25P01"),
        (errors.NotNullViolation, "INSERT INTO py_items (id) VALUES (%s)", (500,), "23502"),
    ]
    for cls, sql, params, code in cases:
        e = expect_error(conn, cls, sql, params)
        assert e.sqlstate == code, (sql, e.sqlstate)
        assert e.diag.message_primary, sql
        (one,) = conn.execute("SELECT %s::integer", (1,)).fetchone()
        assert one == 1
    # A failing executemany (one pipeline, one Sync): the rows after the failure are
    # skipped. Whether the row before it stays is not checked: PostgreSQL rolls back all
    # statements before the Sync, permafrost commits each statement on its own.
    try:
        conn.cursor().executemany("INSERT INTO py_items (id, name) VALUES (%s, 'x')", [(200,), (1,), (201,)])
        raise AssertionError("executemany did not fail")
    except errors.UniqueViolation:
        pass
    ids = [r[0] for r in conn.execute("SELECT id FROM py_items WHERE id >= 200 ORDER BY id")]
    assert 201 not in ids, ids
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


@check
def default_mode_transactions(conn):
    # psycopg's default: autocommit off, a BEGIN before the first statement.
    TS = psycopg.pq.TransactionStatus
    with psycopg.connect(DSN) as c:
        c.execute("INSERT INTO py_items (id, name, qty) VALUES (%s, %s, %s)", (300, "tx", 5))
        assert c.info.transaction_status == TS.INTRANS
        assert c.execute("SELECT qty FROM py_items WHERE id = %s", (300,)).fetchone() == (5,)
        # Not visible to another connection before COMMIT.
        assert conn.execute("SELECT count(*) FROM py_items WHERE id = 300").fetchone() == (0,)
        c.commit()
        assert c.info.transaction_status == TS.IDLE
        assert conn.execute("SELECT qty FROM py_items WHERE id = 300").fetchone() == (5,)
        c.execute("UPDATE py_items SET qty = 0 WHERE id = %s", (300,))
        c.rollback()
        assert conn.execute("SELECT qty FROM py_items WHERE id = 300").fetchone() == (5,)
        # An error aborts the transaction until rollback.
        try:
            c.execute("SELECT 1 / 0")
            raise AssertionError("division by zero accepted")
        except errors.DivisionByZero:
            pass
        assert c.info.transaction_status == TS.INERROR
        try:
            c.execute("SELECT 1")
            raise AssertionError("a statement ran in an aborted transaction")
        except errors.InFailedSqlTransaction:
            pass
        c.rollback()
        # The transaction() context: committed on exit, rolled back on an exception;
        # nested, a savepoint.
        with c.transaction():
            c.execute("UPDATE py_items SET qty = qty + 1 WHERE id = %s", (300,))
            try:
                with c.transaction():
                    c.execute("UPDATE py_items SET qty = 50 WHERE id = %s", (300,))
                    c.execute("SELECT 1 / 0")
            except errors.DivisionByZero:
                pass
            assert c.execute("SELECT qty FROM py_items WHERE id = 300").fetchone() == (6,)
        try:
            with c.transaction():
                c.execute("UPDATE py_items SET qty = 100 WHERE id = %s", (300,))
                raise KeyError("abandon")
        except KeyError:
            pass
        c.rollback()
    assert conn.execute("SELECT qty FROM py_items WHERE id = 300").fetchone() == (6,)
    # Write skew: two transactions each read both rows and write one; the second to
    # commit fails with 40001 and changes nothing.
    a, b = psycopg.connect(DSN), psycopg.connect(DSN)
    try:
        both = "SELECT sum(qty)::bigint FROM py_items WHERE id IN (300, 301)"
        conn.execute("INSERT INTO py_items (id, name, qty) VALUES (301, 'tx', 5)")
        assert a.execute(both).fetchone() == (11,)
        assert b.execute(both).fetchone() == (11,)
        a.execute("UPDATE py_items SET qty = 0 WHERE id = 300")
        b.execute("UPDATE py_items SET qty = 0 WHERE id = 301")
        a.commit()
        try:
            b.commit()
            raise AssertionError("write skew committed")
        except errors.SerializationFailure as e:
            assert e.sqlstate == "40001"
    finally:
        a.close()
        b.close()
    assert conn.execute("SELECT qty FROM py_items WHERE id = 301").fetchone() == (5,)
    conn.execute("DELETE FROM py_items WHERE id IN (300, 301)")


@check
def prepared_statements_and_pipeline(conn):
    for i in range(8):  # prepared server-side after the first few executions
        row = conn.execute("SELECT name FROM py_items WHERE id = %s", (i + 1,), prepare=True).fetchone()
        assert row is not None and row[0] in (f"item{i + 1}", "renamed"), row
    with conn.pipeline():
        cur = conn.cursor()
        for i in range(300, 310):
            cur.execute("INSERT INTO py_items (id, name) VALUES (%s, %s)", (i, f"p{i}"))
        cur.execute("SELECT count(*) FROM py_items WHERE id >= %s AND id < %s", (300, 310))
        (n,) = cur.fetchone()
    assert n == 10, n


@check
def executemany_is_one_implicit_transaction(conn):
    # executemany sends its statements as one extended-protocol group (one Sync): as in
    # PostgreSQL, that is one implicit transaction, applied whole or not at all.
    conn.execute("DROP TABLE IF EXISTS py_em")
    conn.execute("CREATE TABLE py_em (id BIGINT PRIMARY KEY, v TEXT)")
    try:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO py_em VALUES (%s, %s)", [(1, "a"), (2, "b"), (1, "dup"), (3, "c")])
        raise AssertionError("no error")
    except errors.UniqueViolation:
        pass
    assert conn.execute("SELECT count(*) FROM py_em").fetchone() == (0,), "a failed group left rows behind"
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO py_em VALUES (%s, %s)", [(1, "a"), (2, "b"), (3, "c")])
    assert conn.execute("SELECT count(*) FROM py_em").fetchone() == (3,)
    conn.execute("DROP TABLE py_em")


@check
def server_side_cursor(conn):
    # A named cursor is DECLARE ... CURSOR, read with FETCH FORWARD n (psycopg's default
    # mode: inside the transaction it opens).
    with psycopg.connect(DSN) as c:
        c.execute("DROP TABLE IF EXISTS py_cur")
        c.execute("CREATE TABLE py_cur (id BIGINT PRIMARY KEY, v TEXT)")
        c.commit()  # (a block's schema change applies at its COMMIT)
        c.execute("INSERT INTO py_cur VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')")
        c.commit()
        with c.cursor(name="py_big") as cur:
            cur.itersize = 2
            cur.execute("SELECT id, v FROM py_cur WHERE id >= %s ORDER BY id", (2,))
            assert cur.fetchone() == (2, "b")
            assert cur.fetchmany(2) == [(3, "c"), (4, "d")]
            assert cur.fetchall() == [(5, "e")]
        c.commit()
        c.execute("DROP TABLE py_cur")
        c.commit()


@check
def many_connections_see_the_same_data(conn):
    others = [connect() for _ in range(4)]
    try:
        for k, c in enumerate(others):
            c.execute("INSERT INTO py_items (id, name) VALUES (%s, %s)", (400 + k, f"c{k}"))
        for c in others:
            (n,) = c.execute("SELECT count(*) FROM py_items WHERE id >= 400 AND id < 410").fetchone()
            assert n == 4, n
    finally:
        for c in others:
            c.close()


def main():
    with connect() as conn:
        for t in ("py_orders", "py_items", "py_types"):
            conn.execute(f"DROP TABLE IF EXISTS {t}")
        conn.execute("DROP PROCEDURE IF EXISTS py_move")
        conn.execute(
            "CREATE TABLE py_items (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10,2), "
            "qty INTEGER DEFAULT 0) WITH (partition_by = 'id')"
        )
        conn.execute("CREATE TABLE py_orders (item_id BIGINT NOT NULL, amount BIGINT NOT NULL)")
        conn.execute(
            "CREATE TABLE py_types (id BIGINT PRIMARY KEY, s SMALLINT, i BIGINT, f DOUBLE PRECISION, "
            "n NUMERIC(10,2), t TEXT, ts TIMESTAMP, ok BOOLEAN, b BYTEA, z INTEGER)"
        )
    passed = failed = 0
    for fn in CHECKS:
        try:
            with connect() as conn:
                fn(conn)
            passed += 1
            print(f"ok   {fn.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc(file=sys.stdout)
    with connect() as conn:
        conn.execute("DROP PROCEDURE IF EXISTS py_move")
        for t in ("py_orders", "py_items", "py_types"):
            conn.execute(f"DROP TABLE IF EXISTS {t}")
    print(f"psycopg: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
