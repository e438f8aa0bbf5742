-- Clauses applications write: GROUP BY by position and by select-list name, aggregates
-- with FILTER, FETCH FIRST, FOR UPDATE / FOR SHARE (checked; see the README for what they
-- mean here). Expected output: PostgreSQL 15's (regen.sh). Errors print only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE cl_sale (id int PRIMARY KEY, region text, amount int, paid boolean);
INSERT INTO cl_sale VALUES (1, 'north', 10, true), (2, 'north', 20, false), (3, 'south', 5, true),
    (4, 'south', NULL, true), (5, 'west', 7, false), (6, NULL, 3, true);

-- GROUP BY a position, a select-list name, an expression's position
SELECT region, count(*) FROM cl_sale GROUP BY 1 ORDER BY 1;
SELECT region AS r, sum(amount) AS total FROM cl_sale GROUP BY r ORDER BY r;
SELECT amount > 6 AS big, count(*) FROM cl_sale GROUP BY 1 ORDER BY 1;
SELECT region, paid, count(*) FROM cl_sale GROUP BY 2, 1 ORDER BY 1, 2;
-- an input column wins over a select-list name
SELECT amount AS region, count(*) FROM cl_sale GROUP BY region, amount ORDER BY 1, 2;
-- a position past the list (42P10), an aggregate's position (42803)
SELECT region FROM cl_sale GROUP BY 3;
SELECT count(*) FROM cl_sale GROUP BY 1;

-- FILTER
SELECT count(*) FILTER (WHERE paid) AS paid, count(*) FILTER (WHERE NOT paid) AS unpaid,
       sum(amount) FILTER (WHERE region = 'north') AS north FROM cl_sale;
SELECT region, count(amount) FILTER (WHERE amount > 6) FROM cl_sale GROUP BY region ORDER BY region;
SELECT abs(amount) FILTER (WHERE paid) FROM cl_sale;

-- FETCH FIRST
SELECT id FROM cl_sale ORDER BY id FETCH FIRST 2 ROWS ONLY;
SELECT id FROM cl_sale ORDER BY id OFFSET 1 ROWS FETCH NEXT 3 ROWS ONLY;
SELECT id FROM cl_sale ORDER BY id DESC FETCH FIRST ROW ONLY;

-- FOR UPDATE / FOR SHARE, in a block and out of one; not with aggregates
BEGIN;
SELECT id, amount FROM cl_sale WHERE id = 1 FOR UPDATE;
UPDATE cl_sale SET amount = amount + 1 WHERE id = 1;
SELECT s.id FROM cl_sale s WHERE s.region = 'south' ORDER BY s.id FOR SHARE OF s NOWAIT;
COMMIT;
SELECT amount FROM cl_sale WHERE id = 1 FOR UPDATE;
SELECT count(*) FROM cl_sale FOR UPDATE;
SELECT id FROM cl_sale FOR UPDATE OF nothing;

-- columns functionally dependent on a grouped primary key (TPC-C's consistency checks)
CREATE TABLE cl_region (name text PRIMARY KEY, budget int);
INSERT INTO cl_region VALUES ('north', 100), ('south', 5), ('west', 7);
SELECT r.name, r.budget, sum(s.amount) FROM cl_region r, cl_sale s WHERE s.region = r.name
    GROUP BY r.name ORDER BY r.name;
SELECT count(*) FROM (SELECT name, budget, sum(amount) sm FROM cl_sale, cl_region
    WHERE region = name GROUP BY name) t WHERE budget <> sm;
SELECT r.name FROM cl_region r JOIN cl_sale s ON s.region = r.name GROUP BY r.name
    HAVING r.budget > 6 ORDER BY r.budget DESC;
-- a column of the other table is not dependent (42803)
SELECT r.name, s.amount FROM cl_region r, cl_sale s WHERE s.region = r.name GROUP BY r.name;
SELECT region, amount FROM cl_sale GROUP BY region;
-- HAVING without GROUP BY makes one group
SELECT count(*) FROM cl_sale HAVING count(*) > 3;
SELECT 1 AS one FROM cl_sale HAVING min(id) > 3;
SELECT 'x' AS x FROM cl_sale HAVING true;
SELECT id FROM cl_sale HAVING true;
DROP TABLE cl_region;
DROP TABLE cl_sale;
-- A strict operator over the NULL constant is NULL whatever the row would give: PostgreSQL
-- folds it when it plans, so the other side is never evaluated.
CREATE TABLE nf (a int, b int);
INSERT INTO nf VALUES (1, 0), (2, 5);
SELECT a FROM nf WHERE NULL <> a / b;
SELECT a FROM nf WHERE CAST(NULL AS int) + a * 2000000000 * 2000000000 IS NOT NULL;
SELECT a FROM nf WHERE NOT (NULL > a / b) OR a = 2;
SELECT a FROM nf WHERE a / b > 0;
SELECT a FROM nf WHERE 1 / 0 > a;
DROP TABLE nf;
