-- ALTER TABLE ... RENAME TO, RENAME COLUMN, ALTER COLUMN ... SET / DROP DEFAULT.
CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int DEFAULT 1, note text);
INSERT INTO items (id, name) VALUES (1, 'pen'), (2, 'ink');
ALTER TABLE items RENAME TO stock;
SELECT * FROM items;
SELECT id, name, qty FROM stock ORDER BY id;
ALTER TABLE stock RENAME COLUMN qty TO quantity;
SELECT name, quantity FROM stock ORDER BY id;
SELECT qty FROM stock;
ALTER TABLE stock ALTER COLUMN quantity SET DEFAULT 5;
INSERT INTO stock (id, name) VALUES (3, 'pad');
ALTER TABLE stock ALTER COLUMN quantity DROP DEFAULT;
INSERT INTO stock (id, name) VALUES (4, 'clip');
ALTER TABLE stock ALTER note SET DEFAULT 'n/a';
INSERT INTO stock (id, name) VALUES (5, 'tape') RETURNING name, quantity, note;
SELECT name, quantity, note FROM stock ORDER BY id;
-- The new names in keys and indexes, and in errors.
CREATE UNIQUE INDEX stock_name ON stock (name);
ALTER TABLE stock RENAME COLUMN name TO label;
INSERT INTO stock (id, label) VALUES (6, 'pen');
SELECT label FROM stock WHERE label = 'ink';
UPDATE stock SET quantity = 9 WHERE label = 'ink' RETURNING id, label, quantity;
-- Errors.
ALTER TABLE stock RENAME COLUMN nope TO other;
ALTER TABLE stock RENAME COLUMN label TO note;
ALTER TABLE stock ALTER COLUMN nope SET DEFAULT 1;
ALTER TABLE stock ALTER COLUMN quantity SET DEFAULT 'many';
CREATE TABLE other (x int);
ALTER TABLE stock RENAME TO other;
ALTER TABLE nope RENAME TO other2;
ALTER TABLE IF EXISTS nope RENAME TO other2;
-- A rename in a transaction block applies at COMMIT.
BEGIN;
ALTER TABLE other RENAME TO other3;
COMMIT;
SELECT count(*) FROM other3;
DROP TABLE other3;
DROP TABLE stock;
