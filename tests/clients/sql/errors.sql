-- Errors as PostgreSQL gives them: message, DETAIL, HINT and the error cursor (LINE and
-- caret), for the queries applications write. Expected output: PostgreSQL 15's (regen.sh).
\set VERBOSITY default
\set SHOW_CONTEXT never
CREATE TABLE er_t (id int PRIMARY KEY, v text, n int NOT NULL);
CREATE TABLE er_u (id int PRIMARY KEY, t_id int, w text);
INSERT INTO er_t VALUES (1, 'a', 10), (2, 'b', 20);
INSERT INTO er_u VALUES (1, 1, 'x');

-- syntax
SELEC 1;
SELECT 1 +;
SELECT * FROM er_t WHERE;
-- names
SELECT nope FROM er_t;
SELECT er_t.nope FROM er_t;
SELECT x.id FROM er_t;
SELECT * FROM er_missing;
SELECT id FROM er_t, er_u;
SELECT id
  FROM er_t
 WHERE bogus = 1;
INSERT INTO er_t (id, nope) VALUES (3, 'c');
UPDATE er_t SET nope = 1;
SELECT * FROM er_t t1 JOIN er_t t1 ON true;
-- functions and operators
SELECT lpadd('a', 3);
SELECT sum('a', 'b') FROM er_t;
SELECT id + 'abc' FROM er_t;
SELECT v + 1 FROM er_t;
SELECT id
     * (v || 'x') FROM er_t WHERE false;
UPDATE er_t SET n = v - 1 WHERE false;
SELECT 1 / 0;
SELECT id FROM er_t WHERE id NOT IN (SELECT id, v FROM er_t);
SELECT id, (SELECT id, v FROM er_t LIMIT 1) FROM er_t;
-- grouping and windows
SELECT v, count(*) FROM er_t GROUP BY id, n HAVING v > 'a';
SELECT id, count(*) FROM er_t;
SELECT v FROM er_t GROUP BY 5;
SELECT count(*) FROM er_t WHERE count(*) > 1;
SELECT count(count(*)) FROM er_t;
SELECT id FROM er_t WHERE row_number() OVER () > 1;
SELECT id FROM er_t GROUP BY row_number() OVER ();
SELECT DISTINCT v FROM er_t ORDER BY n;
SELECT DISTINCT ON (n) v FROM er_t ORDER BY v;
-- subqueries and set operations
SELECT (SELECT id FROM er_t);
SELECT id FROM er_t WHERE id IN (SELECT id, v FROM er_t);
SELECT id FROM er_t UNION SELECT id, v FROM er_t;
SELECT * FROM (SELECT 1);
SELECT * FROM (SELECT id FROM er_t) s(a, b);
WITH w AS (SELECT 1), w AS (SELECT 2) SELECT * FROM w;
-- joins
SELECT * FROM er_t JOIN er_u USING (nope);
SELECT * FROM er_t JOIN er_u USING (w);
SELECT * FROM er_t JOIN er_u USING (id, id);
SELECT * FROM er_t LEFT JOIN er_u ON er_t.id = er_x.t_id;
SELECT * FROM er_t t LEFT JOIN (er_u u JOIN er_u w ON w.t_id = t.id) ON true;
SELECT * FROM er_t t, er_u u LEFT JOIN er_u w ON w.t_id = t.id;
-- writes
INSERT INTO er_t VALUES (1, 'dup', 0);
INSERT INTO er_t VALUES (3, 'c', 1, 'extra');
INSERT INTO er_t (id, v, n) VALUES (3, 'c');
INSERT INTO er_t (id, v) VALUES (3, 'c', 1);
INSERT INTO er_t VALUES (NULL, 'c', 1);
UPDATE er_t SET n = 1, n = 2;
INSERT INTO er_t VALUES (4, 'd', 1) ON CONFLICT (v) DO NOTHING;
INSERT INTO er_t VALUES (99999999999, 'd', 1);
UPDATE er_t SET n = NULL WHERE id = 1;
INSERT INTO er_t SELECT id, w FROM er_u;
INSERT INTO er_t (id) SELECT id, w FROM er_u;
INSERT INTO er_t VALUES (3, 'c', 32768 * 65536);
INSERT INTO er_t VALUES (5, 'e', 1), (6);
INSERT INTO er_t VALUES (5);
INSERT INTO er_t VALUES (5, 'e') RETURNING *;
-- limits
SELECT id FROM er_t LIMIT -1;
SELECT id FROM er_t OFFSET -1;
SELECT id FROM er_t ORDER BY 3;
-- aggregates and window calls where PostgreSQL refuses them, by clause
INSERT INTO er_t VALUES (1, sum(2));
INSERT INTO er_t VALUES (1, row_number() OVER ());
SELECT * FROM (VALUES (count(*))) AS x (a);
UPDATE er_t SET n = max(n);
UPDATE er_t SET v = 'x' WHERE sum(id) > 1;
DELETE FROM er_t WHERE count(*) > 0;
INSERT INTO er_t VALUES (1, 'x') RETURNING sum(id);
SELECT 1 LIMIT sum(1);
SELECT 1 OFFSET count(*);
SELECT id FROM er_t LIMIT id;
SELECT id FROM er_t OFFSET id + 1;
SELECT 1 LIMIT row_number() OVER ();
-- DDL
CREATE TABLE er_t (id int);
CREATE TABLE er_v (id int, id int);
DROP TABLE er_missing;
DROP INDEX er_missing_idx;
DROP VIEW er_missing_view;
CREATE INDEX ON er_t (nope);
DROP TABLE er_u;
DROP TABLE er_t;
