-- CHECK constraints: on a column and on the table, checked on INSERT, UPDATE and upserts;
-- NULL passes; added over rows already there; dropped; kept through a column rename.
CREATE TABLE item (id INT PRIMARY KEY, qty INT CHECK (qty >= 0), price NUMERIC(8,2), CONSTRAINT sane CHECK (price > 0 OR qty = 0));
INSERT INTO item VALUES (1, 5, 2.50), (2, 0, 0), (3, NULL, NULL);
INSERT INTO item VALUES (4, -1, 1);
INSERT INTO item VALUES (5, 3, 0);
UPDATE item SET qty = -5 WHERE id = 1;
UPDATE item SET qty = qty - 1 WHERE id = 1 RETURNING *;
INSERT INTO item VALUES (1, -9, 1) ON CONFLICT (id) DO UPDATE SET qty = -9;
INSERT INTO item VALUES (1, 9, 1) ON CONFLICT (id) DO UPDATE SET qty = excluded.qty RETURNING *;
SELECT * FROM item ORDER BY id;
ALTER TABLE item ADD CONSTRAINT small CHECK (qty < 5);
ALTER TABLE item ADD CONSTRAINT small CHECK (qty < 10);
INSERT INTO item VALUES (6, 11, 1);
ALTER TABLE item ADD CONSTRAINT small CHECK (qty < 20);
ALTER TABLE item DROP CONSTRAINT small;
INSERT INTO item VALUES (6, 11, 1);
ALTER TABLE item ADD CHECK (id > 0);
INSERT INTO item VALUES (-1, 1, 1);
ALTER TABLE item RENAME COLUMN qty TO quantity;
INSERT INTO item VALUES (7, -1, 1);
UPDATE item SET quantity = 2 WHERE id = 7;
-- Names given to unnamed checks.
CREATE TABLE two (a INT CHECK (a > 0), b INT, CHECK (a > 0), CHECK (a < b), CHECK (b > 0));
INSERT INTO two VALUES (1, 0);
INSERT INTO two VALUES (2, 1);
SELECT conname, contype FROM pg_constraint WHERE contype = 'c' AND conrelid IN ('item'::regclass, 'two'::regclass) ORDER BY conname;
SELECT constraint_name, constraint_type FROM information_schema.table_constraints
  WHERE constraint_type = 'CHECK' AND table_name IN ('item', 'two') AND constraint_name NOT LIKE '%not_null' ORDER BY 1;
DROP TABLE item, two;
