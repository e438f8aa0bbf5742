-- Settings and transaction blocks: a SET inside a block lasts if it commits and is undone
-- by ROLLBACK (or by the COMMIT of a failed block); SET LOCAL and set_config(..., true)
-- last until the block ends; SET LOCAL outside a block warns and changes nothing.
SET TimeZone = 'UTC';
SET application_name = 'golden';
SET statement_timeout = 0;
-- A SET undone by ROLLBACK.
BEGIN;
SET statement_timeout = '5s';
SET application_name = 'inside';
SHOW statement_timeout;
ROLLBACK;
SHOW statement_timeout;
SHOW application_name;
-- A SET kept by COMMIT.
BEGIN;
SET statement_timeout = '6s';
COMMIT;
SHOW statement_timeout;
SET statement_timeout = 0;
-- SET LOCAL lasts until the end of the block, COMMIT or ROLLBACK.
BEGIN;
SET LOCAL statement_timeout = '7s';
SHOW statement_timeout;
COMMIT;
SHOW statement_timeout;
BEGIN;
SET LOCAL application_name = 'local';
SHOW application_name;
ROLLBACK;
SHOW application_name;
-- A plain SET after SET LOCAL wins at COMMIT; SET LOCAL after a plain SET ends with the block.
BEGIN;
SET LOCAL statement_timeout = '8s';
SET statement_timeout = '9s';
COMMIT;
SHOW statement_timeout;
BEGIN;
SET statement_timeout = '10s';
SET LOCAL statement_timeout = '11s';
SHOW statement_timeout;
COMMIT;
SHOW statement_timeout;
SET statement_timeout = 0;
-- set_config(name, value, true) is local to the block.
BEGIN;
SELECT set_config('application_name', 'configured', true);
SHOW application_name;
COMMIT;
SHOW application_name;
-- RESET inside a block is undone by ROLLBACK too.
SET statement_timeout = '13s';
BEGIN;
RESET statement_timeout;
SHOW statement_timeout;
ROLLBACK;
SHOW statement_timeout;
SET statement_timeout = 0;
-- RESET ALL inside a block is undone by ROLLBACK.
SET statement_timeout = '14s';
BEGIN;
RESET ALL;
SHOW statement_timeout;
ROLLBACK;
SHOW statement_timeout;
SET statement_timeout = 0;
-- ROLLBACK TO SAVEPOINT puts back the settings changed since the savepoint.
BEGIN;
SET statement_timeout = '15s';
SAVEPOINT a;
SET statement_timeout = '16s';
SET application_name = 'after savepoint';
SHOW application_name;
ROLLBACK TO SAVEPOINT a;
SHOW statement_timeout;
SHOW application_name;
SET LOCAL statement_timeout = '17s';
SAVEPOINT b;
SET application_name = 'then failed';
SELECT 1 / 0;
ROLLBACK TO SAVEPOINT b;
SHOW statement_timeout;
SHOW application_name;
RELEASE SAVEPOINT a;
COMMIT;
SHOW statement_timeout;
SET statement_timeout = 0;
-- A block that failed: its COMMIT rolls back, settings included.
BEGIN;
SET application_name = 'failed';
SELECT 1 / 0;
COMMIT;
SHOW application_name;
-- The session TimeZone as a block's first statement, rolled back.
BEGIN;
SET LOCAL TimeZone = 'Asia/Tokyo';
SELECT timestamptz '2024-07-01 12:00:00+00';
ROLLBACK;
SELECT timestamptz '2024-07-01 12:00:00+00';
-- Outside a block, SET LOCAL warns and changes nothing; set_config(..., true) holds for
-- its statement only.
SET LOCAL statement_timeout = '12s';
SHOW statement_timeout;
SELECT set_config('statement_timeout', '1s', true);
SHOW statement_timeout;
-- RESET goes back to the start-up packet's value (psql's application_name).
RESET application_name;
SHOW application_name;
