-- NUMERIC as PostgreSQL computes it: any precision up to 1000, its scales, its errors. Every
-- answer here is the one PostgreSQL 15 gives (checked with psql; only the error texts differ).
CREATE TABLE acct (id BIGINT PRIMARY KEY, small NUMERIC(12, 2), wide NUMERIC(40, 10), huge NUMERIC(1000, 0), free NUMERIC);
CREATE INDEX acct_wide ON acct (wide);
INSERT INTO acct VALUES (1, 10.50, 123456789012345678901234567890.0123456789, 1e999, 1.50);
INSERT INTO acct VALUES (2, -0.01, -123456789012345678901234567890.0123456789, -12345678901234567890123456789012345678901234567890, 0.1);
INSERT INTO acct VALUES (3, 0, 0.00000000005, 0, 2);
SELECT id, small, wide, free FROM acct ORDER BY wide;
SELECT id, length(CAST(huge AS TEXT)) FROM acct ORDER BY huge;
SELECT id FROM acct WHERE wide = 123456789012345678901234567890.0123456789;
SELECT id FROM acct WHERE wide > 0 ORDER BY id;
SELECT wide * wide, wide + small, wide - 1, -wide FROM acct WHERE id = 1;
SELECT wide / 7, small / 3, free / 3, 1 / free FROM acct WHERE id = 2;
SELECT sum(wide), avg(small), max(wide), min(huge) = -12345678901234567890123456789012345678901234567890 FROM acct;
SELECT round(wide, 2), round(wide, -25), floor(wide), ceil(wide), abs(wide) FROM acct WHERE id = 2;
SELECT 99999999999999999999999999999 + 1, 1e30, 123456789012345678901234567890 * 10, 12345678901234567890123456789.5 % 7;
SELECT 1.0 / 3, 10.0 / 4, 2 / 3.0, 0.000001 / 7;
SELECT CAST(1e100 AS NUMERIC(101, 0)), CAST('12.345' AS NUMERIC(40, 2)), CAST(2.5 AS NUMERIC(40, 0));
-- Errors: a value past its column's precision, one past the format, division by zero; an
-- unconstrained NUMERIC column holds any value.
INSERT INTO acct VALUES (4, 0, 1e30, 0, 0);
INSERT INTO acct VALUES (5, 0, 0, 1e1000, 0);
INSERT INTO acct VALUES (6, 0, 0, 0, 1e30);
SELECT free, free * free FROM acct WHERE id = 6;
UPDATE acct SET free = free / 1e25 WHERE id = 6;
SELECT free FROM acct WHERE id = 6;
UPDATE acct SET free = free * 1e40 WHERE id = 6;
SELECT free FROM acct WHERE id = 6;
SELECT 1e200000;
SELECT wide / 0 FROM acct WHERE id = 1;
SELECT CAST('abc' AS NUMERIC(40, 2));
CREATE TABLE wider (a NUMERIC(1001, 0));
UPDATE acct SET wide = wide * 2 WHERE id = 1;
SELECT wide FROM acct WHERE id = 1;
