-- Correlated subqueries: subqueries that read values of the row around them, run per
-- row (scalar, EXISTS, [NOT] IN), in SELECT, WHERE, HAVING, ORDER BY, UPDATE, DELETE and
-- INSERT ... SELECT; nested ones reading two levels out; NULLs; errors. Expected output:
-- PostgreSQL 15's (regen.sh). Errors print only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE co_t (a int PRIMARY KEY, b int, c int, g text);
CREATE TABLE co_u (x int PRIMARY KEY, a int, v int);
INSERT INTO co_t VALUES (1, 10, 5, 'p'), (2, 20, NULL, 'q'), (3, NULL, 7, 'p'), (4, 40, 1, 'q'), (5, 20, 9, NULL);
INSERT INTO co_u VALUES (100, 1, 3), (101, 1, 4), (102, 2, NULL), (103, 4, 8), (104, 9, 1);

-- scalar: counts and aggregates over the rows "before" each row, none found (NULL)
SELECT a, (SELECT count(*) FROM co_t x WHERE x.b < co_t.b) AS below FROM co_t ORDER BY a;
SELECT a, (SELECT sum(v) FROM co_u WHERE co_u.a = co_t.a) AS s FROM co_t ORDER BY a;
SELECT a, (SELECT v FROM co_u WHERE co_u.a = co_t.a AND v > 3) AS big FROM co_t ORDER BY a;
SELECT a, (SELECT v FROM co_u WHERE co_u.a = co_t.a) FROM co_t ORDER BY a;
SELECT a, b + (SELECT count(*) FROM co_u u WHERE u.a = t.a) * 100 AS mixed FROM co_t t ORDER BY a;

-- EXISTS / NOT EXISTS
SELECT a FROM co_t WHERE EXISTS (SELECT 1 FROM co_u WHERE co_u.a = co_t.a) ORDER BY a;
SELECT a FROM co_t WHERE NOT EXISTS (SELECT 1 FROM co_u WHERE co_u.a = co_t.a) ORDER BY a;
SELECT a, EXISTS (SELECT 1 FROM co_t x WHERE x.b > co_t.b) AS has_bigger FROM co_t ORDER BY a;

-- [NOT] IN with NULLs on either side
SELECT a FROM co_t WHERE c IN (SELECT v FROM co_u WHERE co_u.a = co_t.a) ORDER BY a;
SELECT a FROM co_t WHERE c NOT IN (SELECT v FROM co_u WHERE co_u.a = co_t.a) ORDER BY a;
SELECT a, b IN (SELECT b FROM co_t x WHERE x.a <> co_t.a) AS twin FROM co_t ORDER BY a;

-- nested: the innermost reads both queries around it
SELECT a, (SELECT count(*) FROM co_u u
           WHERE u.a <= t.a AND EXISTS (SELECT 1 FROM co_t x WHERE x.a = u.a AND x.c < t.c)) AS n
FROM co_t t ORDER BY a;

-- a subquery of a subquery in FROM; a correlated subquery beside an uncorrelated one
SELECT s.a, s.n FROM (SELECT a, (SELECT count(*) FROM co_u WHERE co_u.a = co_t.a) AS n FROM co_t) s
WHERE s.n > 0 ORDER BY s.a;
SELECT a FROM co_t WHERE b > (SELECT avg(b) FROM co_t) AND EXISTS (SELECT 1 FROM co_u WHERE co_u.a = co_t.a) ORDER BY a;

-- grouped queries: reading a group key; reading an ungrouped column (42803)
SELECT g, count(*), (SELECT count(*) FROM co_t x WHERE x.g = co_t.g) AS again FROM co_t GROUP BY g ORDER BY g;
SELECT g FROM co_t GROUP BY g HAVING (SELECT max(b) FROM co_t x WHERE x.g = co_t.g) > 20 ORDER BY g;
SELECT g, (SELECT count(*) FROM co_t x WHERE x.a = co_t.a) FROM co_t GROUP BY g;

-- ORDER BY a correlated subquery; joins around it
SELECT a FROM co_t ORDER BY (SELECT count(*) FROM co_u WHERE co_u.a = co_t.a) DESC, a;
SELECT t.a, u.x FROM co_t t JOIN co_u u ON u.a = t.a
WHERE u.v = (SELECT max(v) FROM co_u w WHERE w.a = t.a) ORDER BY t.a;

-- errors: more than one row (21000), more than one column (42601), an unknown column
SELECT a, (SELECT v FROM co_u WHERE co_u.a = co_t.a) FROM co_t WHERE a = 1;
SELECT a FROM co_t WHERE EXISTS (SELECT 1 FROM co_u WHERE co_u.a = co_t.nothing);
SELECT a, (SELECT x, v FROM co_u WHERE co_u.a = co_t.a) FROM co_t;

-- writes: UPDATE and DELETE reading the table they change see it as it was
BEGIN;
UPDATE co_t SET c = (SELECT count(*) FROM co_t x WHERE x.a < co_t.a);
SELECT a, c FROM co_t ORDER BY a;
ROLLBACK;
BEGIN;
DELETE FROM co_t WHERE EXISTS (SELECT 1 FROM co_u WHERE co_u.a = co_t.a AND co_u.v > 3) RETURNING a;
SELECT a FROM co_t ORDER BY a;
ROLLBACK;
CREATE TABLE co_w (a int PRIMARY KEY, n bigint);
INSERT INTO co_w SELECT a, (SELECT count(*) FROM co_u WHERE co_u.a = co_t.a) FROM co_t;
SELECT * FROM co_w ORDER BY a;
DROP TABLE co_w;
DROP TABLE co_u;
DROP TABLE co_t;
