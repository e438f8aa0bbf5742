-- FROM items and row forms beyond tables: VALUES as a query and in FROM, JOIN ... USING and
-- NATURAL JOIN (each shared column once in SELECT *), DISTINCT ON, generate_series, column
-- aliases of a table.
-- Expected output: PostgreSQL 15's (regen.sh). Errors print only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE fi_a (id int PRIMARY KEY, k int, name text);
CREATE TABLE fi_b (bid int PRIMARY KEY, id int, k int, note text);
INSERT INTO fi_a VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 10, 'three');
INSERT INTO fi_b VALUES (100, 1, 10, 'x'), (101, 1, 99, 'y'), (102, 3, 10, 'z'), (103, 7, 10, 'w');

-- VALUES
VALUES (1, 'a'), (2, 'b');
VALUES (1, 'a'), (2, 'b') ORDER BY 1 DESC LIMIT 1;
SELECT * FROM (VALUES (1, 'a'), (3, 'c')) AS v (n, s) ORDER BY n;
SELECT v.n, a.name FROM (VALUES (1), (3), (5)) AS v (n) LEFT JOIN fi_a a ON a.id = v.n ORDER BY v.n;
SELECT column1 + 1, column2 FROM (VALUES (1, 2.5), (2, NULL)) AS t ORDER BY 1;
SELECT 1 UNION ALL VALUES (2), (3) ORDER BY 1;
VALUES (1, 2), (3);
VALUES (1), ('x');

-- USING and NATURAL
SELECT * FROM fi_a JOIN fi_b USING (id) ORDER BY bid;
SELECT id, name, note FROM fi_a LEFT JOIN fi_b USING (id) ORDER BY id, bid;
SELECT * FROM fi_a JOIN fi_b USING (id, k) ORDER BY bid;
SELECT * FROM fi_a NATURAL JOIN fi_b ORDER BY bid;
SELECT fi_a.k, fi_b.k, k FROM fi_a JOIN fi_b USING (k) WHERE fi_a.id = 2;
SELECT count(*) FROM fi_a JOIN fi_b USING (k);
SELECT * FROM fi_a JOIN fi_b USING (nothing);
SELECT * FROM fi_a JOIN fi_b USING (id, id);

-- DISTINCT ON
SELECT DISTINCT ON (k) k, name FROM fi_a ORDER BY k, name;
SELECT DISTINCT ON (k) k, name FROM fi_a ORDER BY k, name DESC;
SELECT DISTINCT ON (id) id, note FROM fi_b ORDER BY id, bid DESC;
SELECT DISTINCT ON (k) k FROM fi_a ORDER BY name;

-- generate_series
SELECT * FROM generate_series(1, 4);
SELECT x FROM generate_series(10, 1, -3) AS x;
SELECT g.n, a.name FROM generate_series(1, 3) AS g (n) LEFT JOIN fi_a a ON a.id = g.n ORDER BY g.n;
SELECT sum(x) FROM generate_series(1, 100) AS x;
SELECT count(*) FROM generate_series(1, 0) AS x;
SELECT * FROM generate_series(1.0, 2.0, 0.5) AS x;
SELECT * FROM generate_series(1, 5, 0);
-- column aliases of a table: its first columns renamed, the rest as they are
SELECT * FROM fi_a AS x (n, kk) ORDER BY n;
SELECT x.n, name FROM fi_a x (n) WHERE x.n > 1 ORDER BY 1;
SELECT x.n, y.bid FROM fi_a x (n) LEFT JOIN fi_b AS y (bid, n2) ON y.n2 = x.n ORDER BY 1, 2;
SELECT x.id FROM fi_a x (n);
SELECT * FROM fi_a x (a, b, c, d);
DROP TABLE fi_b;
DROP TABLE fi_a;
