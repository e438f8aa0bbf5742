-- A subquery in FROM, the query's only relation (SQLAlchemy's Query.count(), paginating
-- wrappers): filters, aggregates, ORDER BY, LIMIT over its rows; column aliases; set
-- operations and subqueries inside it. Expected output: PostgreSQL 15's (regen.sh).
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE fs_t (id int PRIMARY KEY, grp int, name text);
INSERT INTO fs_t VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, NULL), (4, 3, 'd'), (5, 3, 'e');

SELECT count(*) AS count_1 FROM (SELECT fs_t.id AS fs_t_id, fs_t.name AS fs_t_name FROM fs_t) AS anon_1;
SELECT anon_1.fs_t_id, anon_1.fs_t_name FROM (SELECT fs_t.id AS fs_t_id, fs_t.name AS fs_t_name FROM fs_t WHERE grp > 1) AS anon_1 ORDER BY anon_1.fs_t_id;
SELECT * FROM (SELECT grp, count(*) AS n FROM fs_t GROUP BY grp) AS g WHERE n > 1 ORDER BY grp;
SELECT max(n), min(grp) FROM (SELECT grp, count(*) AS n FROM fs_t GROUP BY grp) AS g;
SELECT s.x + 1 AS y FROM (SELECT id * 10 FROM fs_t) AS s (x) ORDER BY y DESC LIMIT 2;
SELECT * FROM (SELECT id FROM fs_t WHERE grp = 1 UNION ALL SELECT id FROM fs_t WHERE grp = 3) AS u ORDER BY id;
SELECT count(*) FROM (SELECT DISTINCT grp FROM fs_t) AS d;
SELECT name FROM (SELECT name, id FROM fs_t ORDER BY id DESC LIMIT 3) AS last3 ORDER BY name NULLS FIRST;
SELECT * FROM (SELECT id FROM fs_t WHERE grp IN (SELECT grp FROM fs_t WHERE name = 'd')) AS s ORDER BY id;
SELECT count(*) FROM (SELECT * FROM (SELECT id, grp FROM fs_t WHERE id > 1) AS inner1 WHERE grp < 3) AS outer1;
-- pulled up into the query (a SELECT of tables joined by inner joins): predicates of both,
-- an index key taken from the inner join, expressions, ORDER BY inside an aggregated query
SELECT s.k, s.n FROM (SELECT id * 2 AS k, upper(name) AS n FROM fs_t WHERE grp < 3) AS s WHERE s.k > 2 ORDER BY 1;
SELECT count(*), sum(a.id + b.id) FROM (SELECT x.id, y.grp FROM fs_t x JOIN fs_t y ON y.id = x.id + 1 WHERE x.grp = 1) AS s
    JOIN fs_t a ON true, fs_t b WHERE a.id = s.id AND b.id = s.grp;
SELECT count(*), max(name) FROM (SELECT x.id, y.name FROM fs_t x JOIN fs_t y ON y.id = x.id + 1 WHERE x.grp = 1) AS s;
SELECT grp, count(*) FROM (SELECT grp, name FROM fs_t ORDER BY id DESC) AS s WHERE name IS NOT NULL GROUP BY grp ORDER BY grp;
SELECT * FROM (SELECT id, grp FROM fs_t WHERE id = 3) AS s WHERE grp = 2 AND id > 0;
SELECT t FROM (SELECT name || '!' AS t, id FROM fs_t) AS s WHERE id IN (1, 4) ORDER BY t;
-- beside other relations: joined to a table, to another subquery, one of two not simple
SELECT f.id, s.n FROM fs_t f JOIN (SELECT id + 1 AS k, name AS n FROM fs_t WHERE grp < 3) AS s ON s.k = f.id ORDER BY 1;
SELECT a.x, b.y FROM (SELECT id AS x FROM fs_t WHERE grp = 1) a, (SELECT id AS y, grp FROM fs_t) b WHERE b.grp = a.x ORDER BY 1, 2;
SELECT a.x, b.n FROM (SELECT id AS x, grp FROM fs_t) a JOIN (SELECT grp, count(*) AS n FROM fs_t GROUP BY grp) b USING (grp) ORDER BY 1;
WITH w AS (SELECT id, grp FROM fs_t WHERE id > 1) SELECT w.id, f.name FROM w JOIN fs_t f ON f.id = w.grp ORDER BY 1;
SELECT count(*), sum(s.id) FROM fs_t f, (SELECT id FROM fs_t ORDER BY id) s WHERE s.id <= f.id;
-- a LEFT JOIN's left side is pulled up, its right side is not
SELECT s.k, f.name FROM (SELECT id + 1 AS k FROM fs_t WHERE grp < 3) AS s LEFT JOIN fs_t f ON f.id = s.k ORDER BY 1;
SELECT f.id, s.k FROM fs_t f LEFT JOIN (SELECT id + 1 AS k FROM fs_t WHERE grp < 3) AS s ON s.k = f.id ORDER BY 1;
SELECT f.id, s.i, s.n FROM fs_t f LEFT JOIN (SELECT id AS i, name AS n FROM fs_t) AS s ON s.i = f.grp + 3 ORDER BY 1;
SELECT count(*), count(s.n) FROM fs_t f LEFT JOIN (SELECT name AS n, grp FROM fs_t) AS s ON s.grp = f.id AND s.n > 'b';
SELECT * FROM (SELECT 1 AS one, 'x' AS two) AS c;
SELECT * FROM (SELECT id FROM fs_t) AS s (a, b);
SELECT q.nope FROM (SELECT id FROM fs_t) AS q;

DROP TABLE fs_t;
