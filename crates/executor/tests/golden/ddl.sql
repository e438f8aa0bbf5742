-- Tables, types, constraints and storage parameters.
CREATE TABLE warehouse (w_id INTEGER PRIMARY KEY, w_name VARCHAR(10), w_tax NUMERIC(4,4), w_ytd NUMERIC(12,2)) WITH (partition_by = 'w_id');
CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_name VARCHAR(24), i_price NUMERIC(5,2)) WITH (partition_by = 'none', evictable = false);
CREATE TABLE every_type (id BIGINT PRIMARY KEY, s SMALLINT, i INTEGER, b BIGINT, d DOUBLE PRECISION, n NUMERIC(10,3), v VARCHAR(5), t TEXT, ts TIMESTAMP, f BOOLEAN, y BYTEA, c CHAR(3));
CREATE TABLE defaults (id INT PRIMARY KEY, a INT DEFAULT 7, b VARCHAR(10) NOT NULL DEFAULT 'none', c TIMESTAMP DEFAULT CURRENT_TIMESTAMP, d NUMERIC(5,2) DEFAULT 1.005);
INSERT INTO defaults (id) VALUES (1);
SELECT id, a, b, c IS NOT NULL AS has_c, d FROM defaults;
-- A table without a primary key is replicated.
CREATE TABLE log (msg TEXT);
INSERT INTO log VALUES ('one'), ('two');
SELECT * FROM log;
-- Errors name the problem.
CREATE TABLE warehouse (x INT);
CREATE TABLE IF NOT EXISTS warehouse (x INT);
CREATE TABLE bad1 (x MONEY);
CREATE TABLE bad2 (x INT REFERENCES nowhere (w_id));
CREATE TABLE bad3 (a INT PRIMARY KEY, b INT UNIQUE);
CREATE TABLE bad4 (a INT, a INT);
CREATE TABLE bad5 (a INT) WITH (partition_by = 'zzz');
CREATE TABLE bad6 (a INT) WITH (colour = 'blue');
CREATE TABLE bad7 (a NUMERIC(1001, 2));
CREATE TABLE bad8 (a INT PRIMARY KEY) WITH (evictable = 'maybe');
CREATE TABLE bad9 (a INT CHECK (a + 1));
CREATE TABLE bad9 (a INT CHECK (b > 0));
CREATE TABLE bad9 (a INT CHECK (count(*) > 0));
CREATE TABLE bad9 (a INT CHECK (a > (SELECT 1)));
CREATE TABLE bad9 (a INT CHECK (a > $1));
CREATE TABLE bad10 (a INT PRIMARY KEY, b VARCHAR(3) DEFAULT 'toolong');
-- Indexes.
CREATE INDEX item_name ON item (i_name);
CREATE INDEX item_name ON item (i_price);
CREATE INDEX IF NOT EXISTS item_name ON item (i_price);
CREATE INDEX ON item USING hash (i_price);
CREATE UNIQUE INDEX wh_name ON warehouse (w_name);
CREATE UNIQUE INDEX wh_name ON warehouse (w_id, w_name);
CREATE INDEX nope ON missing (x);
CREATE INDEX nope ON item (missing);
CREATE INDEX nope ON item (lower(i_name));
DROP INDEX item_name;
DROP INDEX item_name;
DROP INDEX IF EXISTS item_name;
DROP INDEX warehouse_pkey;
DROP TABLE defaults;
DROP TABLE defaults;
DROP TABLE IF EXISTS defaults;
SELECT * FROM defaults;
-- Unsupported statements are refused, not ignored.
CREATE MATERIALIZED VIEW v AS SELECT 1;
