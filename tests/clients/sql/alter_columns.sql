-- ALTER TABLE on columns: ADD COLUMN (with a default the rows there take, NOT NULL,
-- REFERENCES, CHECK), DROP COLUMN (with the indexes and constraints that use it), ALTER
-- COLUMN ... TYPE, SET NOT NULL and DROP NOT NULL, on a table with rows.
CREATE TABLE person (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, nick TEXT);
INSERT INTO person VALUES (1, 'ann', 'a'), (2, 'bob', NULL), (3, 'cy', 'c');
ALTER TABLE person ADD COLUMN age INT;
ALTER TABLE person ADD COLUMN active BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE person ADD COLUMN score INT NOT NULL;
ALTER TABLE person ADD COLUMN name TEXT;
ALTER TABLE person ADD COLUMN IF NOT EXISTS name TEXT;
SELECT * FROM person ORDER BY id;
INSERT INTO person (id, name) VALUES (4, 'dee') RETURNING *;
ALTER TABLE person ADD COLUMN level INT DEFAULT 1 CHECK (level > 0);
INSERT INTO person (id, name, level) VALUES (5, 'eve', 0);
-- Types: lengths, widening, text to integer and back.
ALTER TABLE person ALTER COLUMN name TYPE VARCHAR(50);
INSERT INTO person (id, name) VALUES (6, 'a name longer than twenty characters');
ALTER TABLE person ALTER COLUMN name TYPE VARCHAR(5);
ALTER TABLE person ALTER COLUMN age TYPE BIGINT;
ALTER TABLE person ALTER COLUMN nick TYPE INT USING nick::integer;
ALTER TABLE person ALTER COLUMN level TYPE BIGINT;
SELECT id, name, level FROM person ORDER BY id;
-- NOT NULL.
ALTER TABLE person ALTER COLUMN nick SET NOT NULL;
UPDATE person SET nick = 'x' WHERE nick IS NULL;
ALTER TABLE person ALTER COLUMN nick SET NOT NULL;
INSERT INTO person (id, name, nick) VALUES (7, 'gus', NULL);
ALTER TABLE person ALTER COLUMN nick DROP NOT NULL;
INSERT INTO person (id, name, nick) VALUES (7, 'gus', NULL);
ALTER TABLE person ALTER COLUMN id DROP NOT NULL;
-- DROP COLUMN takes its index and check with it.
CREATE INDEX person_age ON person (age);
ALTER TABLE person DROP COLUMN age;
ALTER TABLE person DROP COLUMN level;
INSERT INTO person (id, name) VALUES (8, 'hal');
ALTER TABLE person DROP COLUMN nope;
ALTER TABLE person DROP COLUMN IF EXISTS nope;
SELECT * FROM person ORDER BY id;
\d person
-- A referenced column stays; a referencing one goes with its key.
CREATE TABLE team (id INT PRIMARY KEY, code TEXT UNIQUE);
CREATE TABLE member (id INT PRIMARY KEY, team_code TEXT REFERENCES team (code), team_id INT REFERENCES team);
INSERT INTO team VALUES (1, 't1');
INSERT INTO member VALUES (1, 't1', 1);
ALTER TABLE member DROP COLUMN team_code;
INSERT INTO member VALUES (2, 9);
INSERT INTO member VALUES (2, 1);
ALTER TABLE member ADD COLUMN other_team INT REFERENCES team;
INSERT INTO member VALUES (3, 1, 5);
SELECT * FROM member ORDER BY id;
DROP TABLE member, team, person;
