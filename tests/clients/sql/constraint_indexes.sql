-- Indexes of PRIMARY KEY and UNIQUE constraints (named or not) against those of CREATE
-- UNIQUE INDEX: how \d and pg_constraint show them, and which DROP removes each.
CREATE TABLE ux (id int PRIMARY KEY, a int, b int CONSTRAINT ux_b_named UNIQUE, c int, CONSTRAINT ux_c_uq UNIQUE (c));
CREATE UNIQUE INDEX ux_a ON ux (a);
\d ux
SELECT conname, contype FROM pg_constraint WHERE conrelid = 'ux'::regclass ORDER BY conname;
DROP INDEX ux_c_uq;
DROP INDEX ux_pkey;
ALTER TABLE ux DROP CONSTRAINT ux_a;
DROP INDEX ux_a;
ALTER TABLE ux DROP CONSTRAINT ux_b_named;
\d ux
DROP TABLE ux;
