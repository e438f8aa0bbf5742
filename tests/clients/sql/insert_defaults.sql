-- DEFAULT in VALUES and INSERT ... DEFAULT VALUES.
CREATE TABLE dv (id serial PRIMARY KEY, name text DEFAULT 'anon', qty int DEFAULT 7, note text, made date DEFAULT current_date);
INSERT INTO dv VALUES (DEFAULT, DEFAULT, DEFAULT, DEFAULT, DEFAULT);
INSERT INTO dv (name, qty) VALUES ('pear', DEFAULT), (DEFAULT, 3);
INSERT INTO dv DEFAULT VALUES;
INSERT INTO dv (id, name) VALUES (DEFAULT, 'fig') RETURNING name, qty, note;
SELECT name, qty, note, made = current_date AS today FROM dv ORDER BY name, qty;
SELECT count(DISTINCT id) FROM dv;
CREATE TABLE kv (k int PRIMARY KEY, v text DEFAULT 'none');
INSERT INTO kv VALUES (1, DEFAULT), (2, 'two');
INSERT INTO kv (k, v) VALUES (3, "default");
SELECT * FROM kv ORDER BY k;
DROP TABLE kv;
DROP TABLE dv;
