-- A scripted psql session against permafrost serve (run by run.sh; expected output in
-- psql_session.out). Errors print only their SQLSTATE, so the output stays stable.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never

-- DDL with the partitioning storage parameter
CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10,2), stock INTEGER DEFAULT 0)
  WITH (partition_by = 'id');
CREATE TABLE sales (item_id BIGINT NOT NULL, qty INTEGER NOT NULL) WITH (partition_by = 'item_id');

-- multi-row INSERT and INSERT ... RETURNING (with a column default)
INSERT INTO items VALUES (1, 'apple', 1.25, 10), (2, 'pear', 2.50, 5), (3, 'plum', 0.75, 0);
INSERT INTO items (id, name, price) VALUES (4, 'fig', 3.00) RETURNING id, name, stock;
INSERT INTO sales VALUES (1, 3), (1, 4), (2, 1), (4, 2);

-- queries: point lookup, WHERE + ORDER BY, aggregates, join with GROUP BY
SELECT * FROM items WHERE id = 2;
SELECT name, price FROM items WHERE price > 1 ORDER BY price DESC;
SELECT count(*), sum(stock), min(price), max(price), round(avg(price), 2) AS avg FROM items;
SELECT i.name, sum(s.qty) AS sold FROM items i JOIN sales s ON s.item_id = i.id
  GROUP BY i.name ORDER BY sold DESC, i.name;

-- UPDATE and DELETE, with and without RETURNING
UPDATE items SET price = price * 2 WHERE name = 'pear';
UPDATE items SET stock = stock + 1 WHERE id = 3 RETURNING id, stock;
DELETE FROM sales WHERE qty < 2;
DELETE FROM items WHERE id = 4 RETURNING name;
SELECT * FROM items ORDER BY id;

-- a SQL-defined procedure and CALL
CREATE PROCEDURE restock(item BIGINT, n INTEGER) PARTITION ON item AS $$
  UPDATE items SET stock = stock + $2 WHERE id = $1;
  SELECT id, stock FROM items WHERE id = $1
$$;
CALL restock(3, 7);
CALL restock(99, 1);

-- \copy from a file (client side) and COPY FROM STDIN (inline data)
\copy items FROM 'items.tsv'
COPY sales FROM STDIN;
3	9
2	2
\.
SELECT * FROM items ORDER BY id;
SELECT * FROM sales ORDER BY item_id, qty;
-- doubles and timestamps print as PostgreSQL prints them
SELECT 1e20::float8 AS big, 0.00001::float8 AS small, 1.5::float8 AS plain,
       '2020-01-02 03:04:05'::timestamp AS whole, '2020-01-02 03:04:05.25'::timestamp AS frac;
-- COPY TO STDOUT (what \copy ... to runs), text and CSV with a header
COPY (SELECT * FROM sales ORDER BY item_id, qty) TO STDOUT;
COPY (SELECT id, name FROM items WHERE id < 3 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER);

-- psql's catalog commands
\dt
\d items
\d

-- errors carry their SQLSTATE, and the session goes on after each one
SELEC 1;
SELECT 1 AS still_working;
SELECT * FROM nope;
SELECT 2 AS still_working;
INSERT INTO items VALUES (1, 'dup', 1, 1);
-- a failing multi-row INSERT inserts nothing
INSERT INTO items VALUES (7, 'kiwi', 1, 1), (1, 'dup', 1, 1);
SELECT count(*) AS kiwis FROM items WHERE id = 7;
-- a failing procedure rolls back all its statements
CREATE PROCEDURE add_two(a BIGINT, b BIGINT) AS $$
  INSERT INTO items (id, name) VALUES ($1, 'x');
  INSERT INTO items (id, name) VALUES ($2, 'y')
$$;
CALL add_two(8, 1);
\dn
\l
\df
\du
\di
COMMENT ON COLUMN items.name IS 'what it is called';
\d+ items
SELECT count(*) AS eights FROM items WHERE id = 8;
-- a transaction block: rolled back, then committed
BEGIN;
INSERT INTO items (id, name) VALUES (9, 'maybe');
SELECT count(*) AS inside FROM items WHERE id = 9;
ROLLBACK;
SELECT count(*) AS after_rollback FROM items WHERE id = 9;
BEGIN;
UPDATE items SET name = 'one' WHERE id = 1;
COMMIT;
SELECT name FROM items WHERE id = 1;
SELECT 3 AS still_working;
-- SQL-level prepared statements
PREPARE pick (bigint) AS SELECT id, name FROM items WHERE id = $1;
EXECUTE pick(1);
EXECUTE pick('2');
EXECUTE pick(1, 2);
PREPARE pick AS SELECT 1;
-- EXPLAIN [ANALYZE] EXECUTE: the prepared statement's plan (a write's ANALYZE writes)
EXPLAIN EXECUTE pick(1);
PREPARE bump (bigint) AS UPDATE items SET stock = stock + 1 WHERE id = $1;
EXPLAIN (ANALYZE, SUMMARY OFF) EXECUTE bump(3);
SELECT stock FROM items WHERE id = 3;
UPDATE items SET stock = stock - 1 WHERE id = 3;
EXPLAIN EXECUTE nothing(1);
DEALLOCATE bump;
DEALLOCATE pick;
EXECUTE pick(1);
-- cursors: declared in a block (or WITH HOLD), read forward
DECLARE early CURSOR FOR SELECT 1;
BEGIN;
DECLARE c CURSOR FOR SELECT id, name FROM items ORDER BY id;
FETCH 2 FROM c;
MOVE NEXT IN c;
FETCH ALL FROM c;
FETCH BACKWARD 1 FROM c;
ROLLBACK;
BEGIN;
DECLARE held CURSOR WITH HOLD FOR SELECT count(*) AS n FROM items;
COMMIT;
FETCH ALL FROM held;
CLOSE held;
CLOSE held;
-- TRUNCATE: all of each table's rows, in one transaction (rolled back here)
BEGIN;
TRUNCATE items, sales;
SELECT count(*) AS inside FROM items;
ROLLBACK;
SELECT count(*) AS after_rollback FROM items;
TRUNCATE items RESTART IDENTITY;
SELECT set_config('application_name', 'psql session', false);
SHOW application_name;
COPY sales FROM STDIN;
5	lots
\.
SELECT count(*) AS sales FROM sales;

-- clean up
DROP PROCEDURE add_two;
DROP PROCEDURE restock;
DROP TABLE sales;
DROP TABLE items;
\dt
