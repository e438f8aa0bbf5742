-- UNION, INTERSECT and EXCEPT [ALL]: duplicates, NULLs, column types resolved over the
-- sides, ORDER BY result columns by name or number, LIMIT and OFFSET, nesting, sides
-- with their own subqueries. Expected output: PostgreSQL 15's (regen.sh).
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE so_a (id int PRIMARY KEY, v int, t text);
CREATE TABLE so_b (id bigint PRIMARY KEY, v int, t varchar(10));
INSERT INTO so_a VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 20, NULL), (4, NULL, 'z');
INSERT INTO so_b VALUES (1, 20, 'y'), (2, 20, 'y'), (5, 50, NULL), (6, NULL, 'w');

SELECT v FROM so_a UNION SELECT v FROM so_b ORDER BY v;
SELECT v FROM so_a UNION ALL SELECT v FROM so_b ORDER BY 1 DESC;
SELECT v FROM so_a INTERSECT SELECT v FROM so_b ORDER BY v;
SELECT v FROM so_a INTERSECT ALL SELECT v FROM so_b ORDER BY v;
SELECT v FROM so_b INTERSECT ALL SELECT v FROM so_a ORDER BY v;
SELECT v FROM so_a EXCEPT SELECT v FROM so_b ORDER BY v;
SELECT v FROM so_b EXCEPT ALL SELECT v FROM so_a ORDER BY v NULLS FIRST;
SELECT v, t FROM so_a UNION SELECT v, t FROM so_b ORDER BY t, v;
SELECT id, t FROM so_a UNION ALL SELECT id, t FROM so_b ORDER BY id DESC LIMIT 3 OFFSET 1;
SELECT id FROM so_a UNION SELECT id FROM so_b ORDER BY id LIMIT 4;
SELECT 1 AS one UNION SELECT 2 UNION SELECT 1 ORDER BY one;
SELECT 1 UNION ALL SELECT 1.5 ORDER BY 1;
SELECT v FROM so_a WHERE v > 10 UNION (SELECT v FROM so_b EXCEPT SELECT 50) ORDER BY 1;
(SELECT id FROM so_a ORDER BY id DESC LIMIT 2) UNION ALL (SELECT id FROM so_b ORDER BY id LIMIT 1) ORDER BY 1;
SELECT id FROM so_a WHERE v IN (SELECT v FROM so_b) UNION SELECT (SELECT max(id) FROM so_a) ORDER BY 1;
SELECT count(*) FROM so_a UNION ALL SELECT count(*) FROM so_b;
SELECT t FROM so_a INTERSECT SELECT t FROM so_b;
-- FETCH FIRST limits the whole, not each side
SELECT x FROM (VALUES (1), (2), (3)) AS v (x) UNION ALL SELECT 4 ORDER BY 1 DESC FETCH FIRST 2 ROWS ONLY;
SELECT v FROM so_a UNION SELECT v FROM so_b ORDER BY 1 OFFSET 1 ROWS FETCH NEXT 2 ROWS ONLY;
SELECT v FROM so_a UNION SELECT v, t FROM so_b;
SELECT v FROM so_a UNION SELECT t FROM so_b;

DROP TABLE so_a;
DROP TABLE so_b;

-- Past work_mem (64 kB, PostgreSQL's least) a set operation runs on disk, as the statement
-- itself or as the one subquery in its query's FROM.
CREATE TABLE so_big (id INT PRIMARY KEY, g INT, x INT, pad TEXT);
INSERT INTO so_big SELECT i, i % 4, (i * 37) % 101, 'pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp' || i
  FROM generate_series(1, 3000) AS s(i);
SET work_mem = '64kB';
SELECT id, pad FROM so_big WHERE id < 2000 INTERSECT SELECT id, pad FROM so_big WHERE id > 1995 ORDER BY 1;
SELECT count(*), min(pad) FROM (SELECT pad FROM so_big UNION SELECT pad FROM so_big WHERE id < 10) AS u;
SELECT g, count(*) FROM (SELECT g, pad FROM so_big EXCEPT SELECT g, pad FROM so_big WHERE x > 50) AS u
  GROUP BY g ORDER BY g;
SELECT * FROM (SELECT id, pad FROM so_big UNION ALL SELECT id, pad FROM so_big ORDER BY 2 DESC LIMIT 3) AS u;
RESET work_mem;
DROP TABLE so_big;
