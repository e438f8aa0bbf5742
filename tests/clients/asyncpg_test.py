"""asyncpg against a running permafrost serve: python3 asyncpg_test.py PORT.

asyncpg speaks the binary format for every value it knows, and looks up the types of
array parameters in the catalogs (its introspection query) before it sends them: this is
arrays, JSONB, UUID, timestamptz, enum and inet/cidr values through that path, in both
directions.

Each check runs on its own; a failing one is reported and the others go on. Prints
`asyncpg: N passed, M failed` and exits non-zero if any failed.
"""

import asyncio
import datetime
import ipaddress
import json
import sys
import traceback
import uuid
from decimal import Decimal

import asyncpg

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 5433
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


async def connect():
    return await asyncpg.connect(host="127.0.0.1", port=PORT, user="permafrost", database="permafrost", timeout=10)


@check
async def array_columns_round_trip(c):
    await c.execute("DROP TABLE IF EXISTS apg_arrays")
    await c.execute(
        "CREATE TABLE apg_arrays (id int PRIMARY KEY, tags text[], n bigint[], u uuid[], "
        "ts timestamptz[], b boolean[], f float8[], d date[], x numeric[])"
    )
    u = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    ts = datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)
    row = (1, ["a", "b c", None, '"q"', "", "NULL"], [1, None, -(2**62)], [u], [ts], [True, False],
           [1.5, None], [datetime.date(2024, 2, 29)], [Decimal("1.50"), Decimal("-3")])
    await c.execute("INSERT INTO apg_arrays VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", *row)
    await c.execute("INSERT INTO apg_arrays VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    2, [], [], [], [], [], [], [], [])
    got = await c.fetchrow("SELECT * FROM apg_arrays WHERE id = 1")
    assert tuple(got) == row, got
    empty = await c.fetchrow("SELECT * FROM apg_arrays WHERE id = 2")
    assert all(v == [] for v in tuple(empty)[1:]), empty
    # The text form, as psql shows it.
    text = await c.fetchval("SELECT tags::text FROM apg_arrays WHERE id = 1")
    assert text == '{a,"b c",NULL,"\\"q\\"","","NULL"}', text


@check
async def array_parameters_and_functions(c):
    assert await c.fetchval("SELECT $1::text[]", ["x", "y z"]) == ["x", "y z"]
    assert await c.fetchval("SELECT $1::int[]", [3, None]) == [3, None]
    await c.execute("DROP TABLE IF EXISTS apg_fn")
    await c.execute("CREATE TABLE apg_fn (id int PRIMARY KEY, tags text[])")
    await c.executemany("INSERT INTO apg_fn VALUES ($1, $2)", [(1, ["a", "b"]), (2, ["c"]), (3, None)])
    assert await c.fetchval("SELECT array_agg(id ORDER BY id) FROM apg_fn WHERE $1 = ANY(tags)", "c") == [2]
    ids = await c.fetchval("SELECT array_agg(id ORDER BY id) FROM apg_fn WHERE id = ANY($1)", [1, 3, 9])
    assert ids == [1, 3], ids
    assert await c.fetchval("SELECT tags[2] FROM apg_fn WHERE id = 1") == "b"
    assert await c.fetchval("SELECT array_length(tags, 1) FROM apg_fn WHERE id = $1", 1) == 2
    assert await c.fetchval("SELECT tags || $1::text[] FROM apg_fn WHERE id = 2", ["d"]) == ["c", "d"]
    got = await c.fetchval("UPDATE apg_fn SET tags = array_append(tags, $1) WHERE id = 2 RETURNING tags", "e")
    assert got == ["c", "e"], got
    rows = await c.fetch("SELECT unnest(tags) AS t FROM apg_fn WHERE id = 1 ORDER BY 1")
    assert [r["t"] for r in rows] == ["a", "b"], rows
    assert await c.fetchval("SELECT string_agg(t, ',' ORDER BY t DESC) FROM unnest($1::text[]) AS t", ["a", "b"]) == "b,a"


@check
async def jsonb_uuid_timestamptz(c):
    await c.execute("DROP TABLE IF EXISTS apg_docs")
    await c.execute("CREATE TABLE apg_docs (id uuid PRIMARY KEY, doc jsonb, at timestamptz)")
    u = uuid.uuid4()
    at = datetime.datetime(2026, 12, 5, 1, 2, 3, tzinfo=datetime.timezone.utc)
    await c.execute("INSERT INTO apg_docs VALUES ($1, $2, $3)", u, json.dumps({"k": [1, 2], "s": "x"}), at)
    row = await c.fetchrow("SELECT id, doc, at, doc->'k' AS k, doc->>'s' AS s FROM apg_docs WHERE id = $1", u)
    assert row["id"] == u and row["at"] == at, row
    assert json.loads(row["doc"]) == {"k": [1, 2], "s": "x"}, row
    assert json.loads(row["k"]) == [1, 2] and row["s"] == "x", row
    assert await c.fetchval("SELECT count(*) FROM apg_docs WHERE doc @> $1", '{"s": "x"}') == 1


@check
async def enum_values(c):
    # asyncpg learns an enum type by its oid from pg_type, then sends and reads labels.
    await c.execute("DROP TABLE IF EXISTS apg_moods")
    await c.execute("DROP TYPE IF EXISTS apg_mood")
    await c.execute("CREATE TYPE apg_mood AS ENUM ('sad', 'ok', 'happy')")
    await c.execute("CREATE TABLE apg_moods (id int PRIMARY KEY, m apg_mood)")
    await c.executemany("INSERT INTO apg_moods VALUES ($1, $2)", [(1, "happy"), (2, "sad"), (3, "ok")])
    rows = await c.fetch("SELECT id, m FROM apg_moods WHERE m >= $1 ORDER BY m", "ok")
    assert [(r["id"], r["m"]) for r in rows] == [(3, "ok"), (1, "happy")], rows
    try:
        await c.execute("INSERT INTO apg_moods VALUES ($1, $2)", 4, "angry")
    except asyncpg.exceptions.InvalidTextRepresentationError:
        pass
    else:
        raise AssertionError("a label the type does not have was accepted")
    await c.execute("DROP TABLE apg_moods")
    await c.execute("DROP TYPE apg_mood")


@check
async def inet_and_cidr(c):
    # Binary both ways: asyncpg sends and reads ipaddress objects.
    await c.execute("DROP TABLE IF EXISTS apg_hosts")
    await c.execute("CREATE TABLE apg_hosts (id int PRIMARY KEY, addr inet, net cidr)")
    await c.execute(
        "INSERT INTO apg_hosts VALUES ($1, $2, $3), ($4, $5, $6)",
        1, ipaddress.ip_interface("192.168.1.5/24"), ipaddress.ip_network("192.168.1.0/24"),
        2, ipaddress.ip_address("2001:db8::1"), ipaddress.ip_network("2001:db8::/32"),
    )
    rows = await c.fetch("SELECT id, addr, net FROM apg_hosts WHERE addr << $1 ORDER BY id", ipaddress.ip_network("192.168.0.0/16"))
    assert [(r["id"], r["addr"], r["net"]) for r in rows] == [
        (1, ipaddress.ip_interface("192.168.1.5/24"), ipaddress.ip_network("192.168.1.0/24"))
    ], rows
    assert await c.fetchval("SELECT addr FROM apg_hosts WHERE id = 2") == ipaddress.ip_address("2001:db8::1")
    assert await c.fetchval("SELECT host(addr) FROM apg_hosts WHERE id = 1") == "192.168.1.5"
    await c.execute("DROP TABLE apg_hosts")


@check
async def bad_array_input_is_an_error(c):
    try:
        await c.fetchval("SELECT '{1,x}'::int[]")
    except asyncpg.exceptions.InvalidTextRepresentationError:
        pass
    else:
        raise AssertionError("'{1,x}'::int[] was accepted")
    assert await c.fetchval("SELECT 1") == 1


async def main():
    passed = failed = 0
    for fn in CHECKS:
        try:
            c = await connect()
            try:
                await fn(c)
            finally:
                await c.close()
            passed += 1
            print(f"ok   {fn.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc()
    print(f"asyncpg: {passed} passed, {failed} failed")
    return failed


if __name__ == "__main__":
    sys.exit(1 if asyncio.run(main()) else 0)
