-- INSERT, UPDATE, DELETE: defaults, RETURNING, constraints, statement atomicity.
CREATE TABLE acct (id BIGINT PRIMARY KEY, owner VARCHAR(8) NOT NULL, balance NUMERIC(10,2) DEFAULT 0, created TIMESTAMP, flags SMALLINT DEFAULT 1);
INSERT INTO acct (id, owner) VALUES (1, 'ann');
INSERT INTO acct (id, owner, balance) VALUES (2, 'bob', 10.5), (3, 'cat', 99.999);
INSERT INTO acct VALUES (4, 'dan', 1, '2024-01-02 03:04:05', 3);
INSERT INTO acct (id, owner) VALUES (5, 'eve') RETURNING id, owner, balance, flags;
-- params: 6, 'fay', 7.25
INSERT INTO acct (id, owner, balance) VALUES ($1, $2, $3);
SELECT * FROM acct ORDER BY id;
-- Violations leave the table as it was.
INSERT INTO acct (id, owner) VALUES (1, 'dup');
INSERT INTO acct (id) VALUES (7);
INSERT INTO acct (id, owner) VALUES (7, 'much too long');
INSERT INTO acct (id, owner, flags) VALUES (8, 'x', 40000);
INSERT INTO acct (id, owner, balance) VALUES (9, 'x', 123456789.0);
INSERT INTO acct (id, owner, created) VALUES (10, 'x', 'not a time');
INSERT INTO acct (id, owner) VALUES (11, 'y'), (12, 'z'), (1, 'dup');
SELECT COUNT(*) FROM acct;
INSERT INTO acct (id, nosuch) VALUES (1, 2);
INSERT INTO acct (id, owner) VALUES (1);
INSERT INTO acct (id, id) VALUES (1, 2);
-- Updates.
UPDATE acct SET balance = balance + 5 WHERE id = 1;
UPDATE acct SET balance = balance * 2, flags = flags + 1 WHERE balance > 10;
UPDATE acct SET owner = UPPER(owner) WHERE id IN (1, 2) RETURNING id, owner;
UPDATE acct SET owner = NULL WHERE id = 1;
UPDATE acct SET nosuch = 1;
UPDATE acct SET balance = 1 WHERE id = 999;
UPDATE acct SET flags = 32767 + flags WHERE id = 4;
SELECT * FROM acct ORDER BY id;
-- Deletes.
DELETE FROM acct WHERE id = 2;
DELETE FROM acct WHERE balance < 10 RETURNING id;
DELETE FROM acct WHERE id = 999;
SELECT id FROM acct ORDER BY id;
DELETE FROM acct;
SELECT COUNT(*) FROM acct;
-- INSERT ... SELECT.
CREATE TABLE src (a INT PRIMARY KEY, b INT);
INSERT INTO src VALUES (1, 10), (2, 20), (3, 30);
INSERT INTO acct (id, owner, balance) SELECT a, 'src', b FROM src WHERE a > 1;
SELECT id, owner, balance FROM acct ORDER BY id;
-- A replicated table: every write goes to every copy.
CREATE TABLE config (k VARCHAR(10) PRIMARY KEY, v INT) WITH (partition_by = 'none');
INSERT INTO config VALUES ('a', 1), ('b', 2);
UPDATE config SET v = v + 10 WHERE k = 'a';
DELETE FROM config WHERE k = 'b';
SELECT * FROM config;
INSERT INTO config VALUES ('a', 3);
