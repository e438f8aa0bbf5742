-- LATERAL items of FROM: subqueries and function calls reading the FROM items before
-- them, computed per row of those (top-N per group, per-row expansion), inside and beside
-- outer joins, in subqueries and recursive queries; WITH ORDINALITY; a set-returning
-- function in the select list.
-- Expected output: PostgreSQL 15's (regen.sh). Errors print only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE la_t (id int PRIMARY KEY, a int, b text);
CREATE TABLE la_u (id int PRIMARY KEY, tid int, v int);
INSERT INTO la_t VALUES (1, 1, 'x'), (2, 2, 'y'), (3, NULL, 'z');
INSERT INTO la_u VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30), (4, 1, 5), (5, 2, 30);

-- subqueries
SELECT * FROM la_t, LATERAL (SELECT la_t.a + 1 AS c) s ORDER BY id;
SELECT la_t.id, top.v FROM la_t CROSS JOIN LATERAL
    (SELECT v FROM la_u WHERE la_u.tid = la_t.id ORDER BY v DESC LIMIT 2) top ORDER BY 1, 2;
SELECT la_t.id, top.v FROM la_t LEFT JOIN LATERAL
    (SELECT v FROM la_u WHERE la_u.tid = la_t.id ORDER BY v DESC LIMIT 1) top ON true ORDER BY 1;
SELECT la_t.id, s.n FROM la_t LEFT JOIN LATERAL
    (SELECT count(*) AS n FROM la_u WHERE la_u.tid = la_t.id) s ON s.n > 1 ORDER BY 1;
SELECT * FROM la_t, LATERAL (SELECT * FROM la_u WHERE la_u.tid = la_t.id) x WHERE x.v > 6 ORDER BY x.id;
SELECT * FROM la_t JOIN LATERAL (SELECT la_t.id AS k) z ON z.k = la_t.id AND la_t.id > 1 ORDER BY 1;
SELECT * FROM la_t NATURAL JOIN LATERAL (SELECT la_t.id AS id, 5 AS q) z ORDER BY id;
SELECT * FROM la_t, LATERAL (SELECT t2.b FROM la_t t2 WHERE t2.id = la_t.a + 1) x ORDER BY la_t.id;
SELECT * FROM la_t, LATERAL (SELECT la_t.b || s.x AS y FROM (VALUES ('!'), ('?')) s (x)) z ORDER BY 1, 4;
SELECT * FROM la_t, LATERAL (SELECT * FROM la_t t2 WHERE t2.id > la_t.id
    UNION ALL SELECT * FROM la_t t3 WHERE t3.id = la_t.id) z ORDER BY 1, 4;
SELECT * FROM la_t LEFT JOIN (la_u CROSS JOIN LATERAL (SELECT la_u.v * 2 AS dv) d) ON la_u.tid = la_t.id
    ORDER BY la_t.id, la_u.id;
SELECT * FROM LATERAL (SELECT 1 AS one) s;
-- inside subqueries, reading the query around too
SELECT (SELECT sum(x.v) FROM LATERAL (SELECT la_u.v FROM la_u WHERE la_u.tid = la_t.id) x) FROM la_t ORDER BY la_t.id;
SELECT * FROM la_t WHERE EXISTS (SELECT 1 FROM la_u, LATERAL (SELECT la_u.v + la_t.id AS z) q
    WHERE q.z > 20 AND la_u.tid = la_t.id) ORDER BY id;
WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r, LATERAL (SELECT r.n * 2 AS m) z WHERE m < 10)
SELECT * FROM r;
-- writes reading them
CREATE TABLE la_w (id int PRIMARY KEY, n int);
INSERT INTO la_w SELECT la_t.id * 10 + g, g FROM la_t, generate_series(1, la_t.id) g;
INSERT INTO la_w SELECT 100 + s.id, s.c FROM
    (SELECT la_t.id, x.c FROM la_t, LATERAL (SELECT count(*) c FROM la_u WHERE la_u.tid = la_t.id) x) s;
SELECT * FROM la_w ORDER BY id;
-- parameters
PREPARE la_p (int) AS SELECT la_t.id, g FROM la_t, generate_series($1, la_t.id) g ORDER BY 1, 2;
EXECUTE la_p (2);
DEALLOCATE la_p;

-- function calls (LATERAL or not, they may read the items before them)
SELECT * FROM la_t CROSS JOIN LATERAL generate_series(1, la_t.id) g ORDER BY 1, 4;
SELECT la_t.id, g FROM la_t, generate_series(la_t.id, 3) g ORDER BY 1, 2;
SELECT la_t.id, (SELECT count(*) FROM generate_series(1, la_t.id)) FROM la_t ORDER BY 1;
SELECT * FROM la_t LEFT JOIN generate_series(2, la_t.a) g ON true ORDER BY 1, 4;

-- WITH ORDINALITY
SELECT * FROM generate_series(1, 3) WITH ORDINALITY;
SELECT * FROM generate_series(1, 3) WITH ORDINALITY AS g (x, n);
SELECT * FROM generate_series(10, 30, 10) WITH ORDINALITY AS g;
SELECT * FROM la_t, LATERAL generate_series(1, 2) WITH ORDINALITY AS g (a, o) ORDER BY 1, 4;
SELECT la_t.id, g.* FROM la_t, generate_series(la_t.id, 3) WITH ORDINALITY g ORDER BY 1, 3;

-- a set-returning function in the select list: a row per value, none when it gives none
SELECT generate_series(1, 3);
SELECT generate_series(1, 3) AS g ORDER BY g DESC;
SELECT id, generate_series(1, a) FROM la_t ORDER BY 1, 2;
SELECT id, generate_series(1, id) + 10 AS x, b FROM la_t WHERE id > 1 ORDER BY 1, 2;
SELECT DISTINCT generate_series(1, id) FROM la_t ORDER BY 1;
SELECT generate_series(1, 5, 2), 'x' AS k;
SELECT sum(x) FROM (SELECT generate_series(1, id) x FROM la_t) s;
SELECT id, (SELECT max(g) FROM generate_series(1, la_t.id) g) FROM la_t ORDER BY id;
SELECT generate_series(3, 1);
SELECT id FROM la_t WHERE generate_series(1, 2) > 1;

-- errors
SELECT * FROM LATERAL (SELECT la_t.a) s, la_t;
SELECT * FROM la_t FULL JOIN LATERAL (SELECT la_t.id AS k) z ON true;
SELECT * FROM la_t RIGHT JOIN LATERAL (SELECT la_t.id AS k) z ON true;
SELECT * FROM la_t, LATERAL (SELECT 1) AS z (a, b);
SELECT * FROM la_t, LATERAL (SELECT la_t.id);
SELECT * FROM la_t, generate_series(1, la_t.nothing) g;
DROP TABLE la_t, la_u, la_w;
