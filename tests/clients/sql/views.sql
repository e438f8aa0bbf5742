-- Views: CREATE [OR REPLACE] VIEW (with column names), read as a subquery in FROM with
-- filters, aggregates and ORDER BY, views of views, DROP VIEW [IF EXISTS], a table a
-- view reads cannot be dropped. Expected output: PostgreSQL 15's (regen.sh). IF EXISTS of
-- a missing object and IF NOT EXISTS of an existing one answer with PostgreSQL's NOTICE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE vw_t (id int PRIMARY KEY, grp int, name text);
INSERT INTO vw_t VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, NULL), (4, 3, 'd');
CREATE VIEW vw_named AS SELECT id, name FROM vw_t WHERE name IS NOT NULL;
SELECT * FROM vw_named ORDER BY id;
SELECT count(*) FROM vw_named WHERE id > 1;
SELECT v.name FROM vw_named AS v WHERE v.id = 4;
CREATE VIEW vw_groups (g, n) AS SELECT grp, count(*) FROM vw_t GROUP BY grp;
SELECT * FROM vw_groups ORDER BY g;
SELECT max(n) FROM vw_groups;
CREATE VIEW vw_of_view AS SELECT g FROM vw_groups WHERE n > 1;
SELECT * FROM vw_of_view;
INSERT INTO vw_t VALUES (5, 1, 'e');
SELECT * FROM vw_of_view;
SELECT * FROM vw_groups ORDER BY g;
CREATE VIEW vw_named AS SELECT 1;
CREATE OR REPLACE VIEW vw_named AS SELECT id, name FROM vw_t WHERE id < 3;
SELECT * FROM vw_named ORDER BY id;
CREATE VIEW vw_bad AS SELECT nope FROM vw_t;
CREATE TABLE vw_named (x int);
DROP TABLE vw_t;
DROP VIEW vw_groups;
DROP VIEW vw_of_view;
DROP VIEW vw_groups;
DROP VIEW nope_view;
\set VERBOSITY default
DROP VIEW IF EXISTS nope_view, vw_of_view;
DROP TABLE IF EXISTS nope_table;
CREATE TABLE IF NOT EXISTS vw_t (x int);
CREATE INDEX IF NOT EXISTS vw_t_grp ON vw_t (grp);
CREATE INDEX IF NOT EXISTS vw_t_grp ON vw_t (grp);
DROP INDEX IF EXISTS vw_t_grp, nope_index;
-- The catalogs show views: psql's \d (and \dv, whose owner column differs), pg_views,
-- information_schema.
CREATE VIEW vw_cat (ident, shout) AS SELECT id, upper(name) FROM vw_t;
SELECT relname FROM pg_class WHERE relkind = 'v' AND relname LIKE 'vw%' AND pg_table_is_visible(oid) ORDER BY 1;
\d vw_cat
SELECT schemaname, viewname FROM pg_views WHERE viewname LIKE 'vw%' ORDER BY 2;
SELECT table_name, table_type FROM information_schema.tables WHERE table_name LIKE 'vw%' ORDER BY 1;
SELECT table_name, check_option FROM information_schema.views WHERE table_name LIKE 'vw%' ORDER BY 1;
SELECT column_name, data_type, numeric_precision, is_nullable FROM information_schema.columns WHERE table_name = 'vw_cat' ORDER BY ordinal_position;
SELECT c.relname, c.relkind, a.attname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
 WHERE c.relname = 'vw_cat' AND a.attnum > 0 ORDER BY a.attnum;
SELECT relname FROM pg_class WHERE oid = 'vw_cat'::regclass;
DROP VIEW vw_cat;
\set VERBOSITY sqlstate
DROP VIEW vw_named;
DROP TABLE vw_t;
