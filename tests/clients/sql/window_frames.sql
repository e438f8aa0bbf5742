-- Window frames (ROWS, RANGE and GROUPS between any two bounds) and named windows (WINDOW w
-- AS ..., OVER w, OVER (w ORDER BY ...)); the errors PostgreSQL gives for frames it refuses.
-- Expected output: PostgreSQL 15's (regen.sh), in psql's default verbosity.
\set SHOW_CONTEXT never
CREATE TABLE fr_t (id int PRIMARY KEY, g text, v int, d numeric(6,2), f float8);
INSERT INTO fr_t VALUES (1, 'a', 10, 1.50, 0.5), (2, 'a', 20, 2.25, 1.5), (3, 'a', 20, NULL, 2.5),
    (4, 'a', 40, 4.00, 3.5), (5, 'b', NULL, 5.00, NULL), (6, 'b', 5, -1.00, 4.5), (7, 'b', 7, 3.30, 5.5),
    (8, 'b', 7, 3.30, 6.5), (9, 'c', 100, 0.01, -1.0), (10, NULL, 1, 9.99, 0.0);

-- ROWS: sliding sums, counts and averages; value functions over the frame
SELECT id, v, sum(v) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s3,
       count(v) OVER (ORDER BY id ROWS 2 PRECEDING) AS c3,
       avg(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING) AS a3,
       min(v) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS mn,
       max(v) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING) AS mx
    FROM fr_t ORDER BY id;
SELECT id, g, first_value(v) OVER w, last_value(v) OVER w, nth_value(v, 2) OVER w,
       sum(v) OVER w, count(*) OVER w
    FROM fr_t WINDOW w AS (PARTITION BY g ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
    ORDER BY id;
SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING),
       sum(v) OVER (ORDER BY id ROWS BETWEEN 2 FOLLOWING AND UNBOUNDED FOLLOWING),
       last_value(id) OVER (ORDER BY id ROWS BETWEEN 5 FOLLOWING AND 6 FOLLOWING),
       count(*) OVER (ORDER BY id ROWS BETWEEN 0 PRECEDING AND 0 FOLLOWING)
    FROM fr_t ORDER BY id;
-- RANGE with offsets over integers, numerics and floats, ascending and descending, NULL keys
SELECT id, v, sum(id) OVER (ORDER BY v RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS near,
       count(*) OVER (ORDER BY v DESC RANGE BETWEEN CURRENT ROW AND 10 FOLLOWING) AS down10,
       first_value(id) OVER (ORDER BY v NULLS FIRST RANGE 13 PRECEDING) AS first13
    FROM fr_t ORDER BY id;
SELECT id, d, sum(d) OVER (ORDER BY d RANGE BETWEEN 1.5 PRECEDING AND 0.75 FOLLOWING),
       count(*) OVER (ORDER BY f RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING),
       max(id) OVER (ORDER BY d DESC RANGE BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING)
    FROM fr_t ORDER BY id;
SELECT id, v, sum(v) OVER (ORDER BY v RANGE BETWEEN 2147483647 PRECEDING AND 2147483647 FOLLOWING)
    FROM fr_t ORDER BY id;
-- RANGE without offsets: peers; GROUPS
SELECT id, v, sum(id) OVER (ORDER BY v RANGE BETWEEN CURRENT ROW AND CURRENT ROW) AS peers,
       sum(id) OVER (ORDER BY v RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS rest,
       sum(id) OVER (ORDER BY v GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS g3,
       count(*) OVER (ORDER BY v GROUPS 2 PRECEDING) AS gc,
       last_value(id) OVER (ORDER BY v, id DESC GROUPS BETWEEN CURRENT ROW AND 1 FOLLOWING) AS gl
    FROM fr_t ORDER BY id;
-- frames over grouped rows; an offset from a parameter-free expression and a subquery
SELECT g, sum(v), sum(sum(v)) OVER (ORDER BY g ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
    FROM fr_t GROUP BY g ORDER BY g;
SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 1 + 1 PRECEDING AND (SELECT 1) FOLLOWING)
    FROM fr_t ORDER BY id;
-- named windows: shared, built on, copied
SELECT id, g, row_number() OVER (w ORDER BY id), rank() OVER (w ORDER BY v), sum(v) OVER (w ORDER BY v)
    FROM fr_t WINDOW w AS (PARTITION BY g) ORDER BY id;
SELECT id, sum(v) OVER w2, count(*) OVER w1
    FROM fr_t WINDOW w1 AS (PARTITION BY g), w2 AS (w1 ORDER BY id ROWS 1 PRECEDING) ORDER BY id;
SELECT id, sum(v) OVER w FROM fr_t WINDOW w AS (ORDER BY id ROWS 1 PRECEDING) ORDER BY id LIMIT 3;
-- refused
SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM fr_t;
SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM fr_t;
SELECT sum(v) OVER (ORDER BY id, v RANGE 1 PRECEDING) FROM fr_t;
SELECT sum(v) OVER (RANGE 1 PRECEDING) FROM fr_t;
SELECT sum(v) OVER (GROUPS 1 PRECEDING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY id ROWS v PRECEDING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY id ROWS 'x' PRECEDING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY g RANGE 1 PRECEDING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY v RANGE 1.5 PRECEDING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY id ROWS -1 PRECEDING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND NULL FOLLOWING) FROM fr_t;
SELECT sum(v) OVER (ORDER BY v RANGE -2 PRECEDING) FROM fr_t;
SELECT sum(v) OVER nope FROM fr_t;
SELECT sum(v) OVER (nope ORDER BY id) FROM fr_t;
SELECT sum(v) OVER w FROM fr_t WINDOW w AS (ORDER BY id), w AS (ORDER BY v);
SELECT sum(v) OVER (w PARTITION BY g) FROM fr_t WINDOW w AS (ORDER BY id);
SELECT sum(v) OVER (w ORDER BY v) FROM fr_t WINDOW w AS (ORDER BY id);
SELECT sum(v) OVER (w) FROM fr_t WINDOW w AS (ORDER BY id ROWS 1 PRECEDING);
DROP TABLE fr_t;
