-- INSERT ... ON CONFLICT ... DO UPDATE (upserts), EXCLUDED, WHERE, RETURNING, arbiters.
CREATE TABLE kv (k int PRIMARY KEY, v text, n int DEFAULT 0);
INSERT INTO kv VALUES (1, 'one', 1), (2, 'two', 2);
INSERT INTO kv VALUES (1, 'uno', 10) ON CONFLICT (k) DO UPDATE SET v = excluded.v, n = kv.n + excluded.n;
SELECT * FROM kv ORDER BY k;
INSERT INTO kv VALUES (2, 'dos', 5), (3, 'tres', 3) ON CONFLICT (k) DO UPDATE SET v = excluded.v RETURNING k, v, n;
SELECT * FROM kv ORDER BY k;
-- A name both the table and EXCLUDED have is ambiguous unqualified.
INSERT INTO kv VALUES (3, 'x', 100) ON CONFLICT (k) DO UPDATE SET n = n + 1 RETURNING *;
-- WHERE: a row it rejects is neither updated, counted nor returned.
INSERT INTO kv VALUES (1, 'never', 0), (2, 'deux', 0) ON CONFLICT (k) DO UPDATE SET v = excluded.v WHERE kv.v <> 'uno' RETURNING k, v;
SELECT * FROM kv ORDER BY k;
-- The table's alias.
INSERT INTO kv AS t VALUES (1, 'eins', 0) ON CONFLICT (k) DO UPDATE SET v = t.v || '/' || excluded.v WHERE t.k = 1 RETURNING t.k, t.v;
-- ON CONSTRAINT, and a unique index other than the primary key.
CREATE TABLE acct (region int, email text, name text, visits int DEFAULT 1, PRIMARY KEY (region, email));
CREATE UNIQUE INDEX acct_name ON acct (region, name);
INSERT INTO acct (region, email, name) VALUES (1, 'a@x', 'ann'), (1, 'b@x', 'bob');
INSERT INTO acct (region, email, name) VALUES (1, 'a@x', 'ann') ON CONFLICT ON CONSTRAINT acct_pkey DO UPDATE SET visits = acct.visits + 1;
INSERT INTO acct (region, email, name) VALUES (1, 'c@x', 'bob') ON CONFLICT (name, region) DO UPDATE SET email = excluded.email RETURNING region, email, name, visits;
SELECT * FROM acct ORDER BY region, email;
-- A conflict on another unique index than the arbiter is still an error.
INSERT INTO acct (region, email, name) VALUES (1, 'z@x', 'ann') ON CONFLICT (region, email) DO UPDATE SET visits = 0;
-- The same key twice in one command.
INSERT INTO kv VALUES (7, 'a', 0), (7, 'b', 0) ON CONFLICT (k) DO UPDATE SET v = excluded.v;
SELECT count(*) FROM kv WHERE k = 7;
-- DO UPDATE needs a target; the target must match a unique index.
INSERT INTO kv VALUES (1, 'x', 0) ON CONFLICT DO UPDATE SET v = 'y';
INSERT INTO kv VALUES (1, 'x', 0) ON CONFLICT (v) DO UPDATE SET v = 'y';
INSERT INTO kv VALUES (1, 'x', 0) ON CONFLICT ON CONSTRAINT nope DO UPDATE SET v = 'y';
-- Columns neither has, and an assignment repeated.
INSERT INTO kv VALUES (1, 'x', 0) ON CONFLICT (k) DO UPDATE SET v = excluded.nope;
INSERT INTO kv VALUES (1, 'x', 0) ON CONFLICT (k) DO UPDATE SET nope = 1;
INSERT INTO kv VALUES (1, 'x', 0) ON CONFLICT (k) DO UPDATE SET v = 'a', v = 'b';
-- Values are converted to the column's type; the proposed row carries its defaults.
INSERT INTO kv (k, v) VALUES (2, 'dflt') ON CONFLICT (k) DO UPDATE SET n = excluded.n, v = excluded.v || '!' RETURNING *;
INSERT INTO kv VALUES (2, 'num', 0) ON CONFLICT (k) DO UPDATE SET n = '42' RETURNING n;
INSERT INTO kv VALUES (2, 'num', 0) ON CONFLICT (k) DO UPDATE SET n = 'forty';
-- A NULL set where NOT NULL forbids it.
CREATE TABLE nn (k int PRIMARY KEY, v text NOT NULL);
INSERT INTO nn VALUES (1, 'a');
INSERT INTO nn VALUES (1, 'b') ON CONFLICT (k) DO UPDATE SET v = NULL;
-- From a SELECT, with a subquery reading no column of the row.
INSERT INTO kv SELECT k, 'sel', k * 10 FROM kv WHERE k <= 2 ON CONFLICT (k) DO UPDATE SET n = excluded.n + (SELECT max(n) FROM nn JOIN kv ON true) RETURNING k, v, n;
SELECT * FROM kv ORDER BY k;
-- DO NOTHING still skips.
INSERT INTO kv VALUES (1, 'skip', 0), (9, 'nine', 9) ON CONFLICT DO NOTHING RETURNING k;
SELECT * FROM kv ORDER BY k;
DROP TABLE nn;
DROP TABLE acct;
DROP TABLE kv;
