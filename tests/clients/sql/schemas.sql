-- Schemas: CREATE SCHEMA, objects in them by qualified names (tables, indexes,
-- constraints, sequences, views, enum types), the same names in two schemas, the
-- catalogs and psql's \dn / \dt / \d, renames, DROP SCHEMA, and their errors.
CREATE SCHEMA app;
CREATE SCHEMA IF NOT EXISTS app;
CREATE SCHEMA app;
CREATE SCHEMA pg_mine;
CREATE SCHEMA billing AUTHORIZATION CURRENT_USER;
CREATE TABLE customer (id int PRIMARY KEY, name text);
CREATE TABLE app.customer (id serial PRIMARY KEY, email text UNIQUE, n int CHECK (n > 0));
CREATE TABLE app.orders (id int PRIMARY KEY, customer_id int REFERENCES app.customer (id), total numeric(8,2));
CREATE INDEX orders_total ON app.orders (total);
CREATE INDEX orders_total ON customer (name);
CREATE INDEX ON app.customer (n);
CREATE TABLE app.customer (a int);
INSERT INTO customer VALUES (1, 'public one');
INSERT INTO app.customer (email, n) VALUES ('a@x', 1), ('b@x', 2);
INSERT INTO app.orders VALUES (10, 1, 5.50), (11, 2, 7);
INSERT INTO app.orders VALUES (12, 9, 1);
INSERT INTO app.customer (email, n) VALUES ('c@x', 0);
SELECT * FROM customer;
SELECT * FROM app.customer ORDER BY id;
SELECT c.id, c.email, o.total FROM app.customer c JOIN app.orders o ON o.customer_id = c.id ORDER BY o.id;
SELECT app.customer.id FROM app.customer ORDER BY 1;
SELECT customer.email FROM app.customer ORDER BY 1;
SELECT p.name, a.email FROM public.customer p, app.customer a WHERE a.id = p.id;
SELECT * FROM app.nosuch;
SELECT * FROM nosuch.customer;
UPDATE app.customer SET n = n + 10 WHERE id = 2 RETURNING *;
DELETE FROM app.orders WHERE id = 11;
SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' AND nspname <> 'information_schema' ORDER BY 1;
\d app.customer
\d app.orders
SELECT schemaname, tablename, indexname FROM pg_indexes WHERE schemaname = 'app' ORDER BY 3;
SELECT table_schema, table_name FROM information_schema.tables
 WHERE table_schema = 'app' OR table_name = 'customer' ORDER BY 1, 2;
SELECT table_schema, table_name, column_name FROM information_schema.columns
 WHERE table_name = 'customer' ORDER BY 1, 2, 3;
SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'app' ORDER BY 2;
SELECT 'app.customer'::regclass, to_regclass('app.nosuch'), pg_get_serial_sequence('app.customer', 'id');
SELECT nspname FROM pg_namespace WHERE oid = 'app'::regnamespace;
-- Sequences, views and types in a schema.
CREATE SEQUENCE app.counter START 100;
SELECT nextval('app.counter'), nextval('app.customer_id_seq');
CREATE VIEW app.big AS SELECT id, total FROM app.orders WHERE total > 1;
SELECT * FROM app.big;
SELECT big.id FROM app.big;
CREATE TYPE app.mood AS ENUM ('sad', 'happy');
CREATE TABLE app.feeling (k int PRIMARY KEY, m app.mood);
INSERT INTO app.feeling VALUES (1, 'happy'), (2, 'sad');
SELECT k, m, pg_typeof(m) FROM app.feeling ORDER BY m;
\dT app.*
COMMENT ON TABLE app.orders IS 'orders of the app';
SELECT obj_description('app.orders'::regclass);
COPY app.orders TO STDOUT;
COPY app.orders (id, customer_id, total) FROM STDIN;
20	1	3.25
\.
SELECT * FROM app.orders ORDER BY id;
-- Renames stay in their schema.
ALTER TABLE app.feeling RENAME TO feelings;
ALTER SEQUENCE app.counter RENAME TO tally;
ALTER TYPE app.mood RENAME TO humour;
SELECT nextval('app.tally');
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'app' AND c.relkind IN ('r', 'S') ORDER BY 1;
\d app.feelings
-- DROP SCHEMA drops an empty schema.
CREATE SCHEMA lone;
CREATE TABLE lone.item (a int);
DROP TABLE lone.item;
DROP SCHEMA lone;
DROP SCHEMA lone;
DROP SCHEMA IF EXISTS lone;
DROP SCHEMA billing;
DROP VIEW app.big;
DROP TABLE app.feelings, app.orders, app.customer;
DROP TYPE app.humour;
DROP SEQUENCE app.tally;
DROP SCHEMA app;
SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' AND nspname <> 'information_schema' ORDER BY 1;
SELECT * FROM customer;
DROP TABLE customer;
-- DROP SCHEMA ... CASCADE drops the schema's objects with it; one that an object outside
-- the schema depends on is refused here (PostgreSQL would drop that one too).
CREATE SCHEMA casc;
CREATE TYPE casc.level AS ENUM ('low', 'high');
CREATE TABLE casc.item (id serial PRIMARY KEY, lvl casc.level, n int UNIQUE);
CREATE INDEX item_lvl ON casc.item (lvl);
CREATE TABLE casc.part (id int PRIMARY KEY, item_id int REFERENCES casc.item (id));
CREATE SEQUENCE casc.counter;
CREATE VIEW casc.high AS SELECT id FROM casc.item WHERE lvl = 'high';
INSERT INTO casc.item (lvl, n) VALUES ('high', 1), ('low', 2);
CREATE SCHEMA single;
CREATE TABLE single.only_one (a int);
\set VERBOSITY terse
DROP SCHEMA casc CASCADE;
DROP SCHEMA single, casc CASCADE;
DROP SCHEMA IF EXISTS casc CASCADE;
\set VERBOSITY default
SELECT nspname FROM pg_namespace WHERE nspname IN ('casc', 'single');
SELECT count(*) FROM pg_class WHERE relname IN ('item', 'part', 'counter', 'high', 'item_lvl', 'only_one');
SELECT count(*) FROM pg_type WHERE typname = 'level';
DROP SCHEMA single CASCADE;
SELECT nspname FROM pg_namespace WHERE nspname IN ('casc', 'single');
-- search_path: unqualified names read and made in the first schema that has them.
CREATE SCHEMA sp;
CREATE TABLE shared_name (v text);
INSERT INTO shared_name VALUES ('public''s');
SET search_path = sp, public;
SELECT current_schema(), current_schemas(true);
CREATE TABLE shared_name (v text);
INSERT INTO shared_name VALUES ('sp''s');
CREATE TYPE sp_kind AS ENUM ('one', 'two');
CREATE TABLE sp_typed (k sp_kind, n serial PRIMARY KEY);
INSERT INTO sp_typed (k) VALUES ('two'::sp_kind);
SELECT v FROM shared_name;
SELECT v FROM public.shared_name;
SELECT k FROM sp_typed;
SELECT table_schema, table_name FROM information_schema.tables WHERE table_name IN ('shared_name', 'sp_typed') ORDER BY 1, 2;
SET search_path = public;
SELECT v FROM shared_name;
SELECT v FROM sp.shared_name;
\set VERBOSITY terse
DROP SCHEMA sp CASCADE;
\set VERBOSITY default
DROP TABLE shared_name;
