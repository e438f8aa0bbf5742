-- Enum types: CREATE TYPE ... AS ENUM, columns of them, order by declaration, casts,
-- ALTER TYPE (ADD VALUE BEFORE / AFTER / IF NOT EXISTS, RENAME VALUE, RENAME TO),
-- DROP TYPE, the catalog (pg_type, pg_enum), and their errors.
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE person (id int PRIMARY KEY, name text, m mood NOT NULL DEFAULT 'ok');
INSERT INTO person VALUES (1, 'ann', 'happy'), (2, 'bob', 'sad'), (3, 'cy', 'ok');
INSERT INTO person (id, name) VALUES (4, 'di');
SELECT * FROM person ORDER BY m, id;
SELECT * FROM person ORDER BY m DESC, id;
SELECT * FROM person WHERE m = 'ok' ORDER BY id;
SELECT * FROM person WHERE m > 'sad' ORDER BY id;
SELECT * FROM person WHERE m IN ('sad', 'happy') ORDER BY id;
SELECT * FROM person WHERE m BETWEEN 'sad' AND 'ok' ORDER BY id;
SELECT m, count(*) FROM person GROUP BY m ORDER BY m;
SELECT min(m), max(m), count(DISTINCT m) FROM person;
SELECT m::text AS t, m::text || '!' AS bang, length(m::text) FROM person ORDER BY id;
SELECT 'happy'::mood, CAST('sad' AS mood), 'ok'::mood < 'happy'::mood AS lt;
SELECT pg_typeof(m) FROM person WHERE id = 1;
UPDATE person SET m = 'happy' WHERE m = 'ok' RETURNING *;
-- Bad labels and comparisons.
INSERT INTO person VALUES (5, 'ed', 'angry');
SELECT 'Sad'::mood;
SELECT * FROM person WHERE m = 'nope';
-- A label added before, after and at the end sorts where it was put.
ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok';
ALTER TYPE mood ADD VALUE 'glad' AFTER 'ok';
ALTER TYPE mood ADD VALUE 'ecstatic';
ALTER TYPE mood ADD VALUE IF NOT EXISTS 'ok';
ALTER TYPE mood ADD VALUE 'ok';
ALTER TYPE mood ADD VALUE 'x' BEFORE 'nope';
INSERT INTO person VALUES (5, 'ed', 'meh'), (6, 'flo', 'glad'), (7, 'gus', 'ecstatic');
SELECT * FROM person ORDER BY m, id;
SELECT enumlabel, enumsortorder FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid
 WHERE t.typname = 'mood' ORDER BY enumsortorder;
SELECT typname, typtype, typcategory, typlen FROM pg_type WHERE typname = 'mood';
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'person'::regclass AND attname = 'm';
-- An index on the column: lookups and ranges by the type's order.
CREATE INDEX person_m ON person (m);
SELECT id FROM person WHERE m = 'meh';
SELECT id, m FROM person WHERE m >= 'ok' AND m < 'ecstatic' ORDER BY m, id;
-- Renames.
ALTER TYPE mood RENAME VALUE 'meh' TO 'so-so';
ALTER TYPE mood RENAME VALUE 'nope' TO 'x';
ALTER TYPE mood RENAME VALUE 'sad' TO 'happy';
SELECT id, m FROM person WHERE m <= 'so-so' ORDER BY m, id;
ALTER TYPE mood RENAME TO feeling;
SELECT 'ok'::feeling;
SELECT 'ok'::mood;
-- A column changed to and from the type.
CREATE TABLE notes (id int PRIMARY KEY, f text);
INSERT INTO notes VALUES (1, 'glad'), (2, 'sad');
ALTER TABLE notes ALTER COLUMN f TYPE feeling USING f::feeling;
SELECT * FROM notes ORDER BY f;
ALTER TABLE notes ALTER COLUMN f TYPE text;
SELECT * FROM notes ORDER BY f;
-- Names are taken once, and a type in use is not dropped.
CREATE TYPE feeling AS ENUM ('a');
CREATE TABLE feeling (x int);
DROP TYPE IF EXISTS nothing_here;
DROP TYPE nothing_here;
CREATE TYPE empty_one AS ENUM ();
SELECT count(*) FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid WHERE t.typname = 'empty_one';
CREATE TYPE toolong AS ENUM ('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa');
DROP TABLE person;
DROP TABLE notes;
DROP TYPE feeling, empty_one;
SELECT count(*) FROM pg_type WHERE typname IN ('feeling', 'empty_one');
