-- Custom settings (names with a dot, as applications and extensions use them): SET, SHOW,
-- RESET, set_config, current_setting with and without missing_ok, inside blocks (undone
-- by ROLLBACK, SET LOCAL until the block ends), and their errors.
SHOW app.tenant;
SELECT current_setting('app.tenant');
SELECT current_setting('app.tenant', true) IS NULL AS missing;
SET app.tenant = '42';
SHOW app.tenant;
SELECT current_setting('app.tenant'), current_setting('APP.TENANT');
SET app.tenant TO 'seven';
SHOW app.tenant;
BEGIN;
SET app.tenant = 'in block';
SET LOCAL app.other = 'local';
SHOW app.tenant;
SHOW app.other;
ROLLBACK;
SHOW app.tenant;
SHOW app.other;
BEGIN;
SET app.tenant = 'kept';
COMMIT;
SHOW app.tenant;
SELECT set_config('app.who', 'ann', false);
SHOW app.who;
SELECT current_setting('app.who', false);
RESET app.who;
SHOW app.who;
SET "bad." = 1;
SET "1a.b" = 1;
SET a.b.c = 'deep';
SHOW a.b.c;
SET app.n = 5;
SHOW app.n;
RESET ALL;
SHOW app.tenant;
SHOW no_such_setting;
