-- x = ANY(array) and x <> ALL(array): arrays are array literals' text (parameters,
-- constants, casts), or ARRAY[...] (an IN list).
CREATE TABLE a (id BIGINT PRIMARY KEY, name TEXT, at TIMESTAMP, price NUMERIC(6,2));
INSERT INTO a VALUES (1, 'one', '2024-01-01', 1.50), (2, 'two', NULL, 2.00), (3, 'th"ree', '2024-03-03', NULL), (4, NULL, NULL, 4.25);
SELECT id FROM a WHERE id = ANY('{1,3,9}') ORDER BY id;
SELECT id FROM a WHERE id = ANY('{1,3,9}'::bigint[]) ORDER BY id;
SELECT id FROM a WHERE id = ANY(ARRAY[2, 4]) ORDER BY id;
SELECT id FROM a WHERE name = ANY('{one,"th\"ree"}') ORDER BY id;
SELECT id FROM a WHERE name <> ALL('{one,"th\"ree"}') ORDER BY id;
SELECT id FROM a WHERE price = ANY('{1.5,4.25}') ORDER BY id;
SELECT id FROM a WHERE at = ANY('{"2024-03-03 00:00:00",2024-01-01}') ORDER BY id;
SELECT id FROM a WHERE id = ANY('{{1,2},{3,NULL}}') ORDER BY id;
-- NULL as PostgreSQL has it: an element NULL makes "not found" unknown.
SELECT id, id = ANY('{1,NULL}'), id <> ALL('{1,NULL}'), NULL::bigint = ANY('{}'), id <> ALL('{}') FROM a ORDER BY id;
SELECT count(*) FROM a WHERE id = ANY(NULL);
-- params: '{3}'
SELECT id, name FROM a WHERE id = ANY($1);
-- params: '{4}'
UPDATE a SET price = 5 WHERE id = ANY($1);
DELETE FROM a WHERE id <> ALL('{1,2,3,4}');
-- Through an index (a lookup per distinct element): repeated elements find a row once.
CREATE INDEX a_name ON a (name);
SELECT id FROM a WHERE name = ANY('{one,one,four,NULL,five}') ORDER BY id;
SELECT x.id, y.name FROM a x JOIN a y ON y.id = x.id WHERE x.id = ANY('{2,2,1,7}') ORDER BY x.id;
SELECT count(*) FROM a WHERE id = ANY('{}');
-- One text read as two types, and more arrays in one statement than are kept read once.
SELECT id FROM a WHERE name = ANY('{1,2}') OR id + 0 = ANY('{1,2}') OR id + 0 = ANY('{3}') OR price = ANY('{9}') OR price = ANY('{8}') OR price = ANY('{5}') ORDER BY id;
SELECT id FROM a WHERE id = ANY('{1,x}');
SELECT id FROM a WHERE id = ANY('1,2');
SELECT id FROM a WHERE id = ANY('{1,');
SELECT id FROM a WHERE id < ANY('{2}') ORDER BY id;
SELECT id FROM a WHERE id = ANY(5);
