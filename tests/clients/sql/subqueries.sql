-- Subqueries that read nothing of the row around them: scalar, EXISTS, [NOT] IN, in
-- SELECT, WHERE, HAVING, UPDATE, DELETE and INSERT. Expected output: PostgreSQL 15's
-- (regen.sh). Errors print only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE sq_t1 (a int PRIMARY KEY, b int, c text);
CREATE TABLE sq_t2 (x int PRIMARY KEY, y int);
INSERT INTO sq_t1 VALUES (1, 10, 'a'), (2, 20, 'b'), (3, NULL, 'c'), (4, 40, NULL);
INSERT INTO sq_t2 VALUES (10, 1), (20, 2), (30, NULL);

-- [NOT] IN: NULLs on either side, an empty set
SELECT a FROM sq_t1 WHERE b IN (SELECT x FROM sq_t2) ORDER BY a;
SELECT a FROM sq_t1 WHERE b NOT IN (SELECT x FROM sq_t2) ORDER BY a;
SELECT a FROM sq_t1 WHERE a NOT IN (SELECT y FROM sq_t2) ORDER BY a;
SELECT a FROM sq_t1 WHERE a IN (SELECT y FROM sq_t2 WHERE y > 100) ORDER BY a;
SELECT a FROM sq_t1 WHERE a NOT IN (SELECT y FROM sq_t2 WHERE y > 100) ORDER BY a;
SELECT NULL::int IN (SELECT y FROM sq_t2 WHERE y > 100) AS in_empty,
       NULL::int NOT IN (SELECT y FROM sq_t2 WHERE y > 100) AS not_in_empty,
       NULL::int IN (SELECT y FROM sq_t2) AS null_in;
SELECT a, b IN (SELECT x FROM sq_t2) AS found FROM sq_t1 ORDER BY a;
SELECT a FROM sq_t1 WHERE a IN (SELECT y FROM sq_t2 WHERE y IN (SELECT a FROM sq_t1 WHERE b = 20));
SELECT a FROM sq_t1 WHERE (a + 9) * 10 IN (SELECT x + 90 FROM sq_t2) ORDER BY a;

-- scalar subqueries: a value, none (NULL), more than one row (21000), in expressions
SELECT a, (SELECT max(x) FROM sq_t2) AS m FROM sq_t1 ORDER BY a;
SELECT (SELECT x FROM sq_t2 WHERE x = 999) IS NULL AS none;
SELECT (SELECT x FROM sq_t2);
SELECT (SELECT count(*) FROM sq_t2), (SELECT y FROM sq_t2 WHERE x = 20);
SELECT a FROM sq_t1 WHERE b > (SELECT avg(x) FROM sq_t2) ORDER BY a;
SELECT CASE WHEN b > (SELECT avg(x) FROM sq_t2) THEN 'high' ELSE 'low' END AS level, a FROM sq_t1 ORDER BY a;
SELECT count(*), (SELECT count(*) FROM sq_t2) FROM sq_t1;
SELECT c, count(*) FROM sq_t1 GROUP BY c HAVING count(*) < (SELECT count(*) FROM sq_t2) ORDER BY c;
SELECT a FROM sq_t1 ORDER BY (SELECT max(x) FROM sq_t2) - a LIMIT 2;

-- EXISTS and NOT EXISTS
SELECT a FROM sq_t1 WHERE EXISTS (SELECT 1 FROM sq_t2 WHERE y = 2) ORDER BY a;
SELECT a FROM sq_t1 WHERE NOT EXISTS (SELECT 1 FROM sq_t2 WHERE y = 5) ORDER BY a;
SELECT EXISTS (SELECT * FROM sq_t2 WHERE y IS NULL), NOT EXISTS (SELECT x FROM sq_t2);

-- the wrong number of columns (42601)
SELECT a FROM sq_t1 WHERE b IN (SELECT x, y FROM sq_t2);
SELECT (SELECT x, y FROM sq_t2 LIMIT 1);

-- in writes
UPDATE sq_t1 SET b = (SELECT max(x) FROM sq_t2) WHERE a = 3;
DELETE FROM sq_t1 WHERE a IN (SELECT y FROM sq_t2 WHERE y = 1) RETURNING a, b;
INSERT INTO sq_t2 VALUES ((SELECT max(x) + 1 FROM sq_t2), 7);
INSERT INTO sq_t2 SELECT a + 100, b FROM sq_t1 WHERE b IN (SELECT x FROM sq_t2);
UPDATE sq_t2 SET y = 0 WHERE x NOT IN (SELECT b FROM sq_t1 WHERE b IS NOT NULL) AND x < 100;
SELECT * FROM sq_t1 ORDER BY a;
SELECT * FROM sq_t2 ORDER BY x;

-- SELECT ALL is SELECT
SELECT ALL a FROM sq_t1 ORDER BY a;

DROP TABLE sq_t1;
DROP TABLE sq_t2;
