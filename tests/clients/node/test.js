// node-postgres (pg) against a running `permafrost serve`: values as it sends them (text
// parameters) and reads them (text results, parsed by their type oids) for arrays, jsonb,
// uuid, timestamptz, numeric, date and bytea; = ANY over an array parameter; a named
// prepared statement; a transaction that commits and one that rolls back; a Pool.
//
// Usage: node test.js PORT. Each check prints ok/FAIL; the exit status is the number of
// failures.
'use strict';
const assert = require('assert');
const { Client, Pool } = require('pg');

const port = Number(process.argv[2]);
const config = { host: '127.0.0.1', port, user: 'permafrost', database: 'permafrost' };
let checks = 0;
let failed = 0;

async function check(name, fn) {
  checks += 1;
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

async function main() {
  const c = new Client(config);
  await c.connect();
  await c.query('DROP TABLE IF EXISTS node_items');
  await c.query(`CREATE TABLE node_items (id BIGINT PRIMARY KEY, tags TEXT[], nums INTEGER[], doc JSONB,
    u UUID, at TIMESTAMPTZ, price NUMERIC(10,2), day DATE, blob BYTEA, flag BOOLEAN)`);
  const at = new Date(Date.UTC(2024, 2, 1, 12, 30, 45, 123));
  const u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';

  await check('node-postgres values: text[], integer[], jsonb, uuid, timestamptz, numeric, date, bytea, bool', async () => {
    await c.query('INSERT INTO node_items VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)', [
      1, ['a', 'b c', 'd,e', 'q"uote'], [3, 1, 2], { k: 'v', n: [1, 2] }, u, at, '12.50', '2024-02-29',
      Buffer.from([0, 1, 254]), true,
    ]);
    const r = await c.query('SELECT * FROM node_items WHERE id = $1', [1]);
    const row = r.rows[0];
    assert.strictEqual(row.id, '1'); // int8 comes back as a string, as from PostgreSQL
    assert.deepStrictEqual(row.tags, ['a', 'b c', 'd,e', 'q"uote']);
    assert.deepStrictEqual(row.nums, [3, 1, 2]);
    assert.deepStrictEqual(row.doc, { k: 'v', n: [1, 2] });
    assert.strictEqual(row.u, u);
    assert.strictEqual(row.at.getTime(), at.getTime());
    assert.strictEqual(row.price, '12.50');
    assert.strictEqual(row.blob.toString('hex'), '0001fe');
    assert.strictEqual(row.flag, true);
    const day = await c.query("SELECT day::text AS d, to_char(at, 'YYYY-MM-DD HH24:MI:SS.MS') AS t FROM node_items");
    assert.deepStrictEqual(day.rows[0], { d: '2024-02-29', t: '2024-03-01 12:30:45.123' });
  });

  await check('node-postgres = ANY($1) over an array parameter, and jsonb operators', async () => {
    await c.query('INSERT INTO node_items (id, doc) VALUES ($1, $2), ($3, $4)', [2, { k: 'w' }, 3, { k: 'v' }]);
    const r = await c.query("SELECT id, doc->>'k' AS k FROM node_items WHERE id = ANY($1) AND doc @> $2 ORDER BY id", [
      [1, 2, 3, 9], JSON.stringify({ k: 'v' }),
    ]);
    assert.deepStrictEqual(r.rows, [{ id: '1', k: 'v' }, { id: '3', k: 'v' }]);
  });

  await check('node-postgres named prepared statement, run three times', async () => {
    const q = { name: 'node_by_id', text: 'SELECT count(*)::int AS n FROM node_items WHERE id <= $1' };
    const ns = [];
    for (const id of [1, 2, 3]) {
      ns.push((await c.query({ ...q, values: [id] })).rows[0].n);
    }
    assert.deepStrictEqual(ns, [1, 2, 3]);
  });

  await check('node-postgres transactions: a commit keeps, a rollback leaves nothing', async () => {
    await c.query('BEGIN');
    await c.query('INSERT INTO node_items (id) VALUES (20)');
    await c.query('COMMIT');
    await c.query('BEGIN');
    await c.query('INSERT INTO node_items (id) VALUES (21)');
    await c.query('ROLLBACK');
    const r = await c.query('SELECT array_agg(id ORDER BY id) AS ids FROM node_items WHERE id >= 20');
    assert.deepStrictEqual(r.rows[0].ids, ['20']);
    await assert.rejects(c.query('SELECT nosuch FROM node_items'), (e) => e.code === '42703');
    assert.strictEqual((await c.query('SELECT 1 AS one')).rows[0].one, 1, 'the connection serves after an error');
  });

  await check('node-postgres Pool: eight concurrent clients writing their own rows', async () => {
    const pool = new Pool({ ...config, max: 8 });
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => pool.query('INSERT INTO node_items (id, tags) VALUES ($1, $2)', [100 + i, [`w${i}`]])),
    );
    const r = await pool.query('SELECT count(*)::int AS n FROM node_items WHERE id >= 100');
    assert.strictEqual(r.rows[0].n, 8);
    await pool.end();
  });

  await c.query('DROP TABLE node_items');
  await c.end();
  console.log(`node-postgres: ${checks - failed} passed, ${failed} failed`);
  process.exit(failed);
}

main().catch((e) => {
  console.log(`node-postgres: ${e.stack || e}`);
  process.exit(1);
});
