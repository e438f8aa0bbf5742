-- COMMENT ON TABLE / COLUMN: kept in the schema, shown by the catalogs (and by \d+, whose
-- Options line shows our storage options: ../psql_session.sql).
CREATE TABLE cm (id int PRIMARY KEY, v text, w int);
COMMENT ON TABLE cm IS 'the table';
COMMENT ON COLUMN cm.v IS 'a value';
COMMENT ON COLUMN public.cm.w IS 'another';
SELECT obj_description('cm'::regclass, 'pg_class'), col_description('cm'::regclass, 2), col_description('cm'::regclass, 1);
SELECT c.relname, d.objsubid, d.description FROM pg_description d JOIN pg_class c ON c.oid = d.objoid WHERE c.relname = 'cm' ORDER BY 2;
COMMENT ON COLUMN cm.w IS NULL;
COMMENT ON TABLE cm IS '';
SELECT obj_description('cm'::regclass, 'pg_class'), col_description('cm'::regclass, 3);
BEGIN;
COMMENT ON TABLE cm IS 'in a block';
ROLLBACK;
SELECT obj_description('cm'::regclass, 'pg_class');
ALTER TABLE cm RENAME COLUMN v TO v2;
SELECT col_description('cm'::regclass, 2);
COMMENT ON COLUMN cm.nope IS 'x';
COMMENT ON TABLE nope IS 'x';
COMMENT ON COLUMN cm IS 'x';
DROP TABLE cm;
