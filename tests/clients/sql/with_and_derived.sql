-- WITH queries (common table expressions) and subqueries or views in FROM beside tables:
-- joined, outer-joined, grouped, named twice, seeing earlier WITH queries, shadowing a
-- table, inside subqueries. Expected output: PostgreSQL 15's (regen.sh). Errors print
-- only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE wd_dept (id int PRIMARY KEY, name text);
CREATE TABLE wd_emp (id int PRIMARY KEY, dept int, salary int, boss int);
INSERT INTO wd_dept VALUES (1, 'ops'), (2, 'dev'), (3, 'empty');
INSERT INTO wd_emp VALUES (10, 1, 100, NULL), (11, 1, 80, 10), (12, 2, 120, 10), (13, 2, 90, 12),
    (14, 2, 95, 12), (15, NULL, 50, NULL);

-- a subquery in FROM joined with a table
SELECT d.name, s.total FROM wd_dept d JOIN (SELECT dept, sum(salary) AS total FROM wd_emp GROUP BY dept) s
    ON s.dept = d.id ORDER BY d.name;
SELECT d.name, s.total FROM wd_dept d LEFT JOIN (SELECT dept, sum(salary) AS total FROM wd_emp GROUP BY dept) s
    ON s.dept = d.id ORDER BY d.name;
SELECT e.id, top.m FROM wd_emp e, (SELECT max(salary) AS m FROM wd_emp) top WHERE e.salary * 1.25 >= top.m ORDER BY e.id;
SELECT a.x, b.y FROM (SELECT 1 AS x UNION SELECT 2) a CROSS JOIN (SELECT 'p' AS y UNION SELECT 'q') b ORDER BY 1, 2;

-- WITH: one, several (a later one reading an earlier one), one named twice
WITH rich AS (SELECT id, dept FROM wd_emp WHERE salary >= 95)
SELECT d.name, count(*) FROM rich JOIN wd_dept d ON d.id = rich.dept GROUP BY d.name ORDER BY d.name;
WITH per_dept AS (SELECT dept, avg(salary) AS a FROM wd_emp WHERE dept IS NOT NULL GROUP BY dept),
     above AS (SELECT e.id, e.dept FROM wd_emp e JOIN per_dept p ON p.dept = e.dept WHERE e.salary > p.a)
SELECT id, dept FROM above ORDER BY id;
WITH t AS (SELECT id, boss FROM wd_emp)
SELECT a.id, b.id AS boss_of_boss FROM t a JOIN t b ON b.id = a.boss ORDER BY a.id;
WITH c (n) AS (SELECT count(*) FROM wd_emp) SELECT n FROM c;
-- a WITH query shadows a table of its name; visible inside subqueries
WITH wd_dept AS (SELECT 99 AS id, 'shadow' AS name) SELECT * FROM wd_dept;
WITH big AS (SELECT id FROM wd_emp WHERE salary > 90)
SELECT d.name FROM wd_dept d WHERE EXISTS (SELECT 1 FROM wd_emp e WHERE e.dept = d.id AND e.id IN (SELECT id FROM big))
ORDER BY d.name;
-- a view joined with a table
CREATE VIEW wd_sizes AS SELECT dept, count(*) AS n FROM wd_emp GROUP BY dept;
SELECT d.name, v.n FROM wd_dept d LEFT JOIN wd_sizes v ON v.dept = d.id ORDER BY d.name;
DROP VIEW wd_sizes;

-- errors: a name given twice (42712), an unknown WITH column (42703)
WITH a AS (SELECT 1), a AS (SELECT 2) SELECT * FROM a;
SELECT * FROM wd_emp e, wd_dept e;
WITH a (x) AS (SELECT 1) SELECT y FROM a;
DROP TABLE wd_emp;
DROP TABLE wd_dept;
