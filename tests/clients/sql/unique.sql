-- UNIQUE on columns without the partition column: one key in the whole table, checked at
-- every partition (Django's unique_together, a unique e-mail beside a serial key).
CREATE TABLE ct (id serial PRIMARY KEY, app text NOT NULL, model text NOT NULL, UNIQUE (app, model));
INSERT INTO ct (app, model) VALUES ('auth', 'user'), ('auth', 'group'), ('admin', 'log'), ('auth', 'perm');
INSERT INTO ct (app, model) VALUES ('auth', 'user');
INSERT INTO ct (app, model) VALUES ('x', 'a'), ('x', 'a');
SELECT app, model FROM ct ORDER BY app, model;
UPDATE ct SET model = 'user' WHERE model = 'group';
UPDATE ct SET model = 'member' WHERE model = 'group';
SELECT app, model FROM ct ORDER BY app, model;
INSERT INTO ct (app, model) VALUES ('auth', 'user'), ('auth', 'site') ON CONFLICT DO NOTHING RETURNING app, model;
INSERT INTO ct (app, model) VALUES ('auth', 'user') ON CONFLICT (app, model) DO UPDATE SET model = 'person' RETURNING app, model;
INSERT INTO ct (app, model) VALUES ('auth', 'perm') ON CONFLICT (model, app) DO UPDATE SET model = 'member';
SELECT app, model FROM ct ORDER BY app, model;
SELECT count(DISTINCT id) FROM ct;
-- NULLs never conflict; a key freed by DELETE or UPDATE can be taken again.
CREATE TABLE em (id int PRIMARY KEY, email text UNIQUE);
INSERT INTO em VALUES (1, NULL), (2, NULL), (3, 'a@x'), (4, 'b@x'), (5, 'c@x'), (6, 'd@x');
INSERT INTO em VALUES (7, 'a@x');
UPDATE em SET email = 'b@x' WHERE id = 3;
DELETE FROM em WHERE id = 4;
UPDATE em SET email = 'b@x' WHERE id = 3;
INSERT INTO em VALUES (8, 'a@x');
UPDATE em SET email = 'e@x' WHERE id = 5;
INSERT INTO em VALUES (9, 'c@x'), (10, NULL);
SELECT * FROM em ORDER BY id;
-- Within a transaction block, and undone by its ROLLBACK.
BEGIN;
INSERT INTO em VALUES (11, 'f@x');
INSERT INTO em VALUES (12, 'f@x');
ROLLBACK;
BEGIN;
DELETE FROM em WHERE email = 'a@x';
INSERT INTO em VALUES (13, 'a@x');
COMMIT;
SELECT * FROM em ORDER BY id;
-- A unique index created over rows already there: refused while keys repeat.
CREATE TABLE dup (id int PRIMARY KEY, code int);
INSERT INTO dup SELECT g, g % 5 FROM generate_series(1, 20) g;
CREATE UNIQUE INDEX dup_code ON dup (code);
DELETE FROM dup WHERE id > 5;
CREATE UNIQUE INDEX dup_code ON dup (code);
INSERT INTO dup VALUES (100, 3);
INSERT INTO dup VALUES (100, 7);
SELECT * FROM dup ORDER BY code;
ALTER TABLE dup ADD UNIQUE (code, id);
INSERT INTO dup VALUES (101, 7);
DROP TABLE dup;
DROP TABLE em;
DROP TABLE ct;
