-- Temporary tables: a session's own tables (CREATE TEMP / TEMPORARY TABLE, CREATE TABLE
-- pg_temp.x), shadowing public's table of the same name for the session, reached by
-- pg_temp.x too; their indexes, SERIAL columns, keys and foreign keys; DML, COPY and a
-- block's rollback on them; the errors PostgreSQL gives. They go with the session (this
-- script's connection), so nothing is left behind.
CREATE TABLE tt_shared (id int PRIMARY KEY, v text);
INSERT INTO tt_shared VALUES (1, 'public row');
CREATE TEMP TABLE tt_shared (id serial PRIMARY KEY, v text NOT NULL);
INSERT INTO tt_shared (v) VALUES ('temp one'), ('temp two'), ('temp three');
SELECT * FROM tt_shared ORDER BY id;
SELECT * FROM public.tt_shared;
SELECT v FROM pg_temp.tt_shared WHERE id = 2;
SELECT s.v, p.v FROM tt_shared s JOIN public.tt_shared p ON p.id = s.id;
WITH tt_shared AS (SELECT 42 AS id) SELECT * FROM tt_shared;
CREATE INDEX tt_shared_v ON tt_shared (v);
SELECT indexname FROM pg_indexes WHERE tablename = 'tt_shared' ORDER BY 1;
UPDATE tt_shared SET v = 'changed' WHERE id = 1 RETURNING *;
DELETE FROM tt_shared WHERE id = 3 RETURNING id;
INSERT INTO tt_shared (v) VALUES (NULL);
COPY (SELECT * FROM tt_shared ORDER BY id) TO STDOUT;
CREATE TEMPORARY TABLE tt_child (n int PRIMARY KEY, shared_id int REFERENCES tt_shared (id) ON DELETE CASCADE);
INSERT INTO tt_child VALUES (1, 1), (2, 2);
INSERT INTO tt_child VALUES (3, 9);
DELETE FROM tt_shared WHERE id = 2;
SELECT * FROM tt_child;
CREATE TEMP TABLE tt_bad (a int REFERENCES public.tt_shared (id));
DELETE FROM public.tt_shared;
CREATE TABLE pg_temp.tt_third (a int);
INSERT INTO tt_third VALUES (7);
SELECT * FROM pg_temp.tt_third;
COPY tt_third TO STDOUT;
COPY tt_third FROM STDIN;
8
\.
SELECT * FROM tt_third ORDER BY a;
SELECT count(*) AS temporary_tables FROM pg_tables WHERE schemaname LIKE 'pg_temp%' AND tablename LIKE 'tt_%';
BEGIN;
CREATE TEMP TABLE tt_block (a int);
INSERT INTO tt_block VALUES (1);
SELECT * FROM tt_block;
ROLLBACK;
SELECT * FROM tt_block;
CREATE TEMP TABLE IF NOT EXISTS tt_shared (a int);
CREATE TEMP TABLE public.tt_bad (a int);
CREATE TABLE tt_bad (a int) ON COMMIT PRESERVE ROWS;
CREATE TABLE tt_bad (a int REFERENCES tt_child (n));
TRUNCATE tt_third;
SELECT count(*) FROM tt_third;
DROP TABLE tt_child, tt_third;
DROP TABLE tt_shared;
SELECT * FROM tt_shared;
DROP TABLE tt_shared;
SELECT * FROM tt_shared;
