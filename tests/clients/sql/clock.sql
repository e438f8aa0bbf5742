-- clock_timestamp() and statement_timestamp(): the wall clock, read as statements run.
CREATE TABLE ck (id int PRIMARY KEY, c timestamptz, s timestamptz, n timestamptz);
INSERT INTO ck SELECT g, clock_timestamp(), statement_timestamp(), now() FROM generate_series(1, 5) g;
SELECT count(*) FILTER (WHERE c >= s AND s >= n) AS ordered FROM ck;
BEGIN;
INSERT INTO ck VALUES (10, clock_timestamp(), statement_timestamp(), now());
INSERT INTO ck VALUES (11, clock_timestamp(), statement_timestamp(), now());
SELECT a.s < b.s AS later_statement, a.n = b.n AS same_transaction, b.c > a.c AS later_clock
  FROM ck a, ck b WHERE a.id = 10 AND b.id = 11;
SELECT statement_timestamp() = statement_timestamp() AS same, clock_timestamp() >= statement_timestamp() AS after;
COMMIT;
SELECT pg_typeof(clock_timestamp()), pg_typeof(statement_timestamp());
SELECT clock_timestamp(1);
-- Procedures: arguments without names, LANGUAGE after the body.
CREATE PROCEDURE put(int) AS $$ INSERT INTO ck VALUES ($1, clock_timestamp(), statement_timestamp(), now()) $$ LANGUAGE sql;
CALL put(20);
CREATE PROCEDURE put2(IN int, x text) LANGUAGE sql AS $$ INSERT INTO ck VALUES ($1, now(), now(), now()) $$;
CALL put2(21, 'a');
CREATE PROCEDURE put3(x int) LANGUAGE sql;
SELECT id, c >= s AND s >= n AS ordered FROM ck WHERE id >= 20 ORDER BY id;
DROP PROCEDURE put;
DROP PROCEDURE put2;
DROP TABLE ck;
