-- EXPLAIN: access paths, join order, filters, subqueries and the partitions a statement
-- runs at (two partitions; the key's partition depends on its value).
CREATE TABLE district (d_w_id INTEGER, d_id INTEGER, d_next_o_id INTEGER, PRIMARY KEY (d_w_id, d_id));
CREATE TABLE stock (s_w_id INTEGER, s_i_id INTEGER, s_quantity INTEGER, PRIMARY KEY (s_w_id, s_i_id));
CREATE TABLE order_line (ol_w_id INTEGER, ol_d_id INTEGER, ol_o_id INTEGER, ol_number INTEGER, ol_i_id INTEGER, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_name TEXT);
CREATE INDEX item_name ON item (i_name);
EXPLAIN SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 2;
-- params: 1, 1, 14, 10, 1, 15
EXPLAIN SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?;
EXPLAIN SELECT i_id FROM item WHERE i_name = 'x' OR i_id > 5 ORDER BY i_id DESC LIMIT 3 OFFSET 1;
EXPLAIN SELECT i.i_name, count(s.s_i_id) FROM item i LEFT JOIN stock s ON s.s_i_id = i.i_id AND s.s_w_id = 1 GROUP BY i.i_name HAVING count(s.s_i_id) > 1;
EXPLAIN SELECT i_id FROM item WHERE EXISTS (SELECT 1 FROM stock WHERE s_w_id = 1 AND s_i_id = i_id) AND i_id IN (SELECT ol_i_id FROM order_line);
EXPLAIN WITH low AS (SELECT s_i_id FROM stock WHERE s_quantity < 10) SELECT i_name FROM item JOIN low ON low.s_i_id = item.i_id;
-- A simple subquery in FROM is pulled up into its query (its table reached through the
-- predicates of both); one with a LIMIT is not.
EXPLAIN SELECT count(*) FROM (SELECT i_id, i_name FROM item WHERE i_id > 1) s WHERE i_name = 'a';
EXPLAIN SELECT * FROM (SELECT i_id, i_name FROM item LIMIT 5) s WHERE i_name = 'a';
EXPLAIN WITH w AS (SELECT s_i_id, s_quantity FROM stock WHERE s_w_id = 1) SELECT i_name, w.s_quantity FROM item JOIN w ON w.s_i_id = item.i_id WHERE item.i_name = 'a';
-- Null-extended by a LEFT JOIN, a subquery is pulled up only when it reads one table's
-- columns and nothing else.
EXPLAIN SELECT i_id, s.q FROM item LEFT JOIN (SELECT s_w_id AS w, s_i_id AS i, s_quantity AS q FROM stock) s ON s.w = 1 AND s.i = item.i_id;
EXPLAIN SELECT i_id, s.q FROM item LEFT JOIN (SELECT s_i_id AS i, s_quantity AS q FROM stock WHERE s_w_id = 1) s ON s.i = item.i_id;
-- A join null-extended as one (a LEFT JOIN's parenthesized right side, a RIGHT JOIN's left
-- side after other joins): its relations' levels are consecutive; past the group, the WHERE
-- conditions on its columns.
EXPLAIN SELECT i_id, s_quantity, ol_o_id FROM item LEFT JOIN (stock JOIN order_line ON ol_i_id = s_i_id AND ol_number > 2) ON s_w_id = 1 AND s_i_id = i_id WHERE ol_o_id IS NULL;
EXPLAIN SELECT i_id, s_quantity FROM stock JOIN order_line ON ol_i_id = s_i_id RIGHT JOIN item ON s_w_id = 1 AND s_i_id = i_id;
EXPLAIN SELECT 1 UNION SELECT i_id FROM item;
EXPLAIN INSERT INTO item VALUES (1, 'a'), (2, 'b');
EXPLAIN UPDATE stock SET s_quantity = s_quantity - 1 WHERE s_w_id = 2 AND s_i_id = 100;
EXPLAIN (COSTS OFF, VERBOSE) DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id < 5;
-- EXPLAIN ANALYZE runs a query and shows each relation's rows (on average per entry
-- into it: `loops`) and the result's; without SUMMARY off it adds the time taken.
INSERT INTO item VALUES (1, 'a'), (2, 'b'), (3, 'c'), (7, 'a');
INSERT INTO stock VALUES (1, 1, 5), (1, 2, 50), (2, 3, 7), (1, 7, 1);
EXPLAIN (ANALYZE, SUMMARY OFF) SELECT i_name FROM item WHERE i_id = 2;
EXPLAIN (ANALYZE, SUMMARY OFF) SELECT i.i_name, s.s_quantity FROM item i JOIN stock s ON s.s_i_id = i.i_id AND s.s_w_id = 1 WHERE i.i_name = 'a' ORDER BY 2;
EXPLAIN (ANALYZE, SUMMARY OFF) SELECT count(*) FROM stock WHERE s_quantity < 10;
-- An ORDER BY that an index range gives (the index's columns after those it fixes, in one
-- direction) is not sorted: the range is walked that way, and a LIMIT stops it at its last
-- row (one entry read, not the warehouse's). Other orders are sorted.
EXPLAIN (ANALYZE, SUMMARY OFF) SELECT s_i_id FROM stock WHERE s_w_id = 1 ORDER BY s_i_id DESC LIMIT 1;
SELECT s_i_id FROM stock WHERE s_w_id = 1 ORDER BY s_i_id DESC LIMIT 2;
SELECT s_i_id, s_quantity FROM stock WHERE s_w_id = 1 AND s_i_id > 1 ORDER BY s_w_id, s_i_id;
EXPLAIN SELECT s_i_id FROM stock WHERE s_w_id = 1 AND s_i_id > 1 ORDER BY s_w_id, s_i_id;
EXPLAIN SELECT s_i_id FROM stock WHERE s_w_id = 1 ORDER BY s_quantity LIMIT 1;
EXPLAIN SELECT s_i_id FROM stock WHERE s_w_id = 1 ORDER BY s_i_id, s_quantity;
EXPLAIN (ANALYZE, SUMMARY OFF) SELECT i_id FROM item WHERE i_id IN (SELECT s_i_id FROM stock WHERE s_w_id = 1) ORDER BY 1;
-- A write's EXPLAIN ANALYZE runs it (as PostgreSQL), counting the rows it wrote.
EXPLAIN (ANALYZE, SUMMARY OFF) UPDATE stock SET s_quantity = s_quantity + 1 WHERE s_w_id = 1 AND s_quantity < 10;
SELECT s_i_id, s_quantity FROM stock WHERE s_w_id = 1 ORDER BY s_i_id;
EXPLAIN (ANALYZE, SUMMARY OFF) INSERT INTO item VALUES (8, 'h'), (9, 'i');
EXPLAIN (ANALYZE, SUMMARY OFF) DELETE FROM item WHERE i_id > 7 RETURNING i_id;
-- Refused: EXPLAIN of EXPLAIN, other formats.
EXPLAIN ANALYZE EXPLAIN SELECT 1;
EXPLAIN (FORMAT JSON) SELECT 1;
EXPLAIN (BUFFERS) SELECT 1;
-- Joined by equalities no index answers: a hash join, its table holding only the rows
-- that pass the predicates on it alone (LEFT JOIN: its ON conditions).
EXPLAIN SELECT i_name, ol_o_id FROM item JOIN order_line ON ol_i_id = i_id + 0 AND ol_number > 2 WHERE i_name = 'a';
EXPLAIN SELECT count(*) FROM item LEFT JOIN stock ON s_quantity = i_id AND s_quantity > 3;
-- Entered once (after a unique lookup), a relation is scanned rather than hashed.
EXPLAIN SELECT i_name FROM item JOIN order_line ON ol_i_id = i_id + 0 WHERE i_id = 4;
-- A subquery in FROM that is not pulled up (it groups) is hashed by its rows' values.
EXPLAIN SELECT i_name, g.n FROM item JOIN (SELECT ol_i_id, count(*) AS n FROM order_line GROUP BY ol_i_id) g ON g.ol_i_id = i_id + 0;
-- EXPLAIN ANALYZE tells how a hash table went: its rows (or its passes past work_mem).
EXPLAIN (ANALYZE, SUMMARY OFF) SELECT count(*) FROM item LEFT JOIN stock ON s_quantity = i_id AND s_quantity > 3;
-- A LATERAL item is run at each entry of its level, after the relations it reads; its
-- plan is shown apart, reading their values as outer.N. EXPLAIN ANALYZE counts its rows.
EXPLAIN SELECT i_name, top.s_quantity FROM item CROSS JOIN LATERAL (SELECT s_quantity FROM stock WHERE s_i_id = i_id ORDER BY s_quantity DESC LIMIT 1) top;
EXPLAIN (ANALYZE, SUMMARY OFF) SELECT i_id, g FROM item, generate_series(1, i_id) g WHERE i_name = 'a';
