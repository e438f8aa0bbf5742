-- UPDATE ... FROM and DELETE ... USING: writes whose rows are chosen by, and whose new
-- values read, other tables. Expected output: PostgreSQL 15's (regen.sh). Errors print
-- only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE jw_item (id int PRIMARY KEY, name text, price int, stock int);
CREATE TABLE jw_change (item_id int PRIMARY KEY, price int, note text);
CREATE TABLE jw_gone (id int PRIMARY KEY, why text);
INSERT INTO jw_item VALUES (1, 'pen', 10, 5), (2, 'ink', 20, 0), (3, 'pad', 30, 7), (4, 'cap', 40, 0);
INSERT INTO jw_change VALUES (1, 11, 'up'), (3, 29, 'down'), (9, 99, 'no such item');
INSERT INTO jw_gone VALUES (2, 'sold out'), (4, 'sold out'), (8, 'never');

-- new values from the other table, rows chosen by the join
UPDATE jw_item SET price = c.price FROM jw_change c WHERE jw_item.id = c.item_id;
SELECT * FROM jw_item ORDER BY id;
-- a condition on the target beside the join, an alias, RETURNING the target's columns
UPDATE jw_item AS i SET name = i.name || ' (' || c.note || ')', stock = stock + 1
    FROM jw_change c WHERE c.item_id = i.id AND i.stock > 5 RETURNING i.id, i.name, i.stock;
-- a condition with OR across the tables, a value that reads only the target
UPDATE jw_item SET stock = stock * 2 FROM jw_change c
    WHERE c.item_id = jw_item.id AND (c.note = 'down' OR jw_item.price > 100);
SELECT * FROM jw_item ORDER BY id;
-- FROM a VALUES list (what ORMs send for bulk updates), and from a join of two tables
UPDATE jw_item SET price = v.p FROM (VALUES (2, 21), (4, 41), (7, 71)) AS v(id, p) WHERE v.id = jw_item.id;
UPDATE jw_item SET stock = 100 FROM jw_gone g LEFT JOIN jw_change c ON c.item_id = g.id
    WHERE g.id = jw_item.id AND c.item_id IS NULL;
SELECT * FROM jw_item ORDER BY id;
-- nothing matches: nothing is written
UPDATE jw_item SET price = 0 FROM jw_change c WHERE c.item_id = jw_item.id AND c.price > 1000;
-- FROM without a join condition: every row, if the other table has any
UPDATE jw_item SET stock = 1 FROM jw_gone WHERE jw_gone.why = 'never' AND jw_item.stock = 100;
SELECT id, stock FROM jw_item ORDER BY id;

-- DELETE ... USING
DELETE FROM jw_item USING jw_gone g WHERE g.id = jw_item.id AND g.why = 'sold out' RETURNING jw_item.id, jw_item.name;
SELECT * FROM jw_item ORDER BY id;
DELETE FROM jw_change c USING jw_item i WHERE c.item_id = i.id RETURNING c.*;
SELECT * FROM jw_change ORDER BY item_id;
DELETE FROM jw_gone USING jw_change WHERE jw_change.item_id = 12345;
SELECT count(*) FROM jw_gone;

-- errors: an ambiguous name (42702), an unknown one (42703), a table named twice (42712),
-- an unknown table (42P01)
UPDATE jw_item SET price = 1 FROM jw_gone WHERE id = 1;
UPDATE jw_item SET price = c.nope FROM jw_change c WHERE c.item_id = jw_item.id;
UPDATE jw_item SET price = 1 FROM jw_item WHERE true;
DELETE FROM jw_item USING jw_nowhere WHERE true;
UPDATE jw_item SET price = 1 FROM jw_gone g JOIN jw_change c ON c.nope = g.id WHERE true;
DROP TABLE jw_gone;
DROP TABLE jw_change;
DROP TABLE jw_item;
