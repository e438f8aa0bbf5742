-- The session TimeZone setting: SET/SHOW forms, how timestamptz values print in a zone
-- (DST, half-hour and LMT offsets), how input without an offset is read, casts, functions
-- and JSON under a non-UTC zone. All values are fixed literals.
SET TimeZone = 'UTC';
SHOW TimeZone;
-- SET forms, and how SHOW spells what was set.
SET TimeZone = 'America/New_York';
SHOW TimeZone;
SET TIME ZONE 'Europe/Paris';
SHOW TIME ZONE;
SET TimeZone TO 'asia/kolkata';
SHOW TimeZone;
SET timezone = 'utc';
SHOW timezone;
SELECT current_setting('TimeZone');
SELECT set_config('TimeZone', 'Asia/Tokyo', false);
SHOW TimeZone;
SELECT current_setting('timezone');
SELECT timestamptz '2024-07-01 12:00:00+00';
-- An unknown zone is an error and leaves the setting as it was.
SET TimeZone = 'Mars/Olympus';
SET TIME ZONE 'PST';
SHOW TimeZone;
-- Numeric forms: a number of hours east of UTC (ISO sign), and POSIX strings (west positive).
SET TIME ZONE '+05';
SHOW TimeZone;
SELECT timestamptz '2024-07-01 12:00:00+00';
SET TIME ZONE -3;
SHOW TimeZone;
SELECT timestamptz '2024-07-01 12:00:00+00';
SET TIME ZONE 5.5;
SHOW TimeZone;
SELECT timestamptz '2024-07-01 12:00:00+00';
SET TIME ZONE INTERVAL '+02:00' HOUR TO MINUTE;
SHOW TimeZone;
SELECT timestamptz '2024-07-01 12:00:00+00';
SET TimeZone = 'UTC+3';
SHOW TimeZone;
SELECT timestamptz '2024-07-01 12:00:00+00';
SET TimeZone = 'Etc/GMT+5';
SHOW TimeZone;
SELECT timestamptz '2024-07-01 12:00:00+00', timestamptz '2024-01-01 12:00:00+00';
SET TimeZone = '-03:30';
SHOW TimeZone;
SELECT timestamptz '2024-07-01 12:00:00+00';
SET TIME ZONE INTERVAL '1 day';
-- Set as a block's first statement, it holds for the block's statements.
SET TimeZone = 'UTC';
BEGIN;
SET TimeZone = 'Asia/Tokyo';
SELECT timestamptz '2024-07-01 12:00:00+00';
COMMIT;
SHOW TimeZone;
-- Stored instants print in the session zone.
SET TimeZone = 'UTC';
CREATE TABLE tzt (id int PRIMARY KEY, t timestamptz);
INSERT INTO tzt VALUES
  (1, '2024-07-01 12:00:00+00'),
  (2, '2024-01-15 12:00:00+00'),
  (3, '2024-03-10 06:59:59+00'),
  (4, '2024-03-10 07:00:00+00'),
  (5, '1850-01-01 12:00:00+00'),
  (6, '2024-07-01 23:30:00-02');
SELECT id, t FROM tzt ORDER BY id;
SET TimeZone = 'America/New_York';
SELECT id, t FROM tzt ORDER BY id;
SET TimeZone = 'Asia/Kolkata';
SELECT id, t FROM tzt ORDER BY id;
SET TimeZone = 'Asia/Kathmandu';
SELECT id, t FROM tzt ORDER BY id;
SET TimeZone = 'Europe/Amsterdam';
SELECT id, t FROM tzt WHERE id IN (1, 2) ORDER BY id;
SET TimeZone = 'Australia/Lord_Howe';
SELECT id, t FROM tzt WHERE id IN (1, 2) ORDER BY id;
SET TimeZone = 'Etc/GMT+5';
SELECT id, t FROM tzt WHERE id IN (1, 2) ORDER BY id;
-- Input without an offset is read in the session zone.
SET TimeZone = 'Europe/Paris';
CREATE TABLE local_in (id int PRIMARY KEY, t timestamptz);
INSERT INTO local_in VALUES
  (1, '2024-07-01 12:00'),
  (2, '2024-01-01 12:00'),
  (3, '2024-03-31 02:30'),
  (4, '2024-10-27 02:30'),
  (5, '2024-10-27 02:30+02'),
  (6, '2024-10-27 02:30+01');
SELECT id, t FROM local_in ORDER BY id;
SET TimeZone = 'UTC';
SELECT id, t FROM local_in ORDER BY id;
-- The same literal with an explicit offset, under several zones.
SELECT '2024-07-01 12:00:00+02'::timestamptz;
SET TimeZone = 'America/New_York';
SELECT '2024-07-01 12:00:00+02'::timestamptz;
SET TimeZone = 'Asia/Kolkata';
SELECT '2024-07-01 12:00:00+02'::timestamptz;
-- A zone name or abbreviation inside the literal.
SET TimeZone = 'UTC';
SELECT timestamptz '2024-07-01 12:00 Europe/Paris', timestamptz '2024-01-01 12:00 Europe/Paris';
SELECT timestamptz '2024-07-01 12:00 America/New_York', timestamptz '2024-07-01 12:00 EST', timestamptz '2024-07-01 12:00 UTC';
SELECT timestamptz '2024-07-01 12:00 Mars/Olympus';
-- Casts under a non-UTC zone.
SET TimeZone = 'America/New_York';
SELECT id, t::timestamp AS ts, t::date AS d, t::time AS tm, t::text AS txt FROM tzt WHERE id IN (1, 2, 6) ORDER BY id;
SELECT timestamp '2024-07-01 12:00'::timestamptz, timestamp '2024-01-01 12:00'::timestamptz, date '2024-07-01'::timestamptz, date '2024-01-01'::timestamptz;
SELECT CAST(timestamptz '2024-07-02 03:00:00+00' AS date), CAST('2024-07-01 12:00' AS timestamptz);
-- Comparisons with timestamp and date values use the session zone.
SELECT id FROM tzt WHERE t > '2024-06-01'::date ORDER BY id;
SELECT id FROM tzt WHERE t = '2024-07-01 08:00' ORDER BY id;
SELECT id FROM tzt WHERE t = timestamp '2024-07-01 08:00' ORDER BY id;
SELECT id FROM tzt WHERE t::date = '2024-07-01' ORDER BY id;
SELECT timestamptz '2024-07-01 12:00:00+00' = timestamp '2024-07-01 08:00', timestamptz '2024-07-01 00:00:00-04' = date '2024-07-01';
-- date_trunc works on local time.
SELECT id, date_trunc('day', t), date_trunc('month', t), date_trunc('hour', t) FROM tzt WHERE id IN (1, 2, 6) ORDER BY id;
SET TimeZone = 'Asia/Kolkata';
SELECT id, date_trunc('day', t), date_trunc('month', t), date_trunc('hour', t) FROM tzt WHERE id IN (1, 2, 6) ORDER BY id;
SELECT date_trunc('day', timestamptz '2024-07-01 12:00:00+00', 'America/New_York');
-- extract fields in the session zone.
SET TimeZone = 'America/New_York';
SELECT id, extract(hour FROM t) AS h, extract(day FROM t) AS d, extract(epoch FROM t) AS e, extract(timezone FROM t) AS tz, extract(timezone_hour FROM t) AS tzh, extract(timezone_minute FROM t) AS tzm FROM tzt WHERE id IN (1, 2) ORDER BY id;
SET TimeZone = 'Asia/Kathmandu';
SELECT extract(hour FROM t) AS h, extract(minute FROM t) AS mi, extract(timezone FROM t) AS tz, extract(timezone_hour FROM t) AS tzh, extract(timezone_minute FROM t) AS tzm FROM tzt WHERE id = 1;
SET TimeZone = 'America/St_Johns';
SELECT extract(timezone FROM t) AS tz, extract(timezone_hour FROM t) AS tzh, extract(timezone_minute FROM t) AS tzm, t FROM tzt WHERE id = 2;
-- to_char with offset and abbreviation patterns.
SET TimeZone = 'America/New_York';
SELECT id, to_char(t, 'YYYY-MM-DD HH24:MI:SS TZH:TZM'), to_char(t, 'TZ tz OF') FROM tzt WHERE id IN (1, 2, 5) ORDER BY id;
SET TimeZone = 'Asia/Kolkata';
SELECT to_char(t, 'YYYY-MM-DD HH24:MI:SS TZH:TZM'), to_char(t, 'TZ OF') FROM tzt WHERE id = 1;
SET TimeZone = 'Asia/Kathmandu';
SELECT to_char(t, 'YYYY-MM-DD HH24:MI:SS TZH:TZM'), to_char(t, 'TZ OF') FROM tzt WHERE id = 1;
SET TimeZone = 'Europe/Paris';
SELECT to_char(t, 'TZ OF'), to_char(t, 'HH12:MI AM TZ') FROM tzt WHERE id IN (1, 2) ORDER BY id;
-- age() on timestamptz.
SET TimeZone = 'America/New_York';
SELECT age(timestamptz '2024-07-01 12:00:00+00', timestamptz '2024-01-15 12:00:00+00'), age(timestamptz '2024-03-11 00:00:00-04', timestamptz '2024-03-10 00:00:00-05');
-- Interval arithmetic across a DST change: '1 day' keeps the wall clock, '24 hours' does not.
SELECT timestamptz '2024-03-09 12:00' + interval '1 day' AS one_day, timestamptz '2024-03-09 12:00' + interval '24 hours' AS h24;
SELECT timestamptz '2024-11-02 12:00' + interval '1 day' AS one_day, timestamptz '2024-11-02 12:00' + interval '24 hours' AS h24;
SELECT timestamptz '2024-02-10 12:00' + interval '1 month', timestamptz '2024-01-31 12:00' + interval '1 month', timestamptz '2024-03-10 12:00' - interval '1 day';
SELECT timestamptz '2024-03-10 12:00' - timestamptz '2024-03-09 12:00', timestamptz '2024-03-11 00:00' - timestamptz '2024-03-10 00:00';
SELECT g FROM generate_series(timestamptz '2024-03-09 00:00', timestamptz '2024-03-12 00:00', interval '1 day') AS g;
SET TimeZone = 'Europe/Paris';
SELECT timestamptz '2024-03-30 12:00' + interval '1 day' AS one_day, timestamptz '2024-03-30 12:00' + interval '24 hours' AS h24;
SELECT timestamptz '2024-03-31 01:30' + interval '1 hour', timestamptz '2024-03-30 02:30' + interval '1 day';
SELECT g FROM generate_series(timestamptz '2024-10-26 02:30', timestamptz '2024-10-29 00:00', interval '1 day') AS g;
-- AT TIME ZONE: timestamptz to local timestamp, timestamp to timestamptz; a '+05' string there is POSIX (west positive).
SET TimeZone = 'America/New_York';
SELECT t AT TIME ZONE 'Asia/Tokyo' AS tokyo_wall, t AT TIME ZONE 'UTC' AS utc_wall, pg_typeof(t AT TIME ZONE 'Asia/Tokyo') FROM tzt WHERE id = 1;
SELECT timestamp '2024-07-01 12:00' AT TIME ZONE 'Asia/Tokyo' AS from_tokyo, pg_typeof(timestamp '2024-07-01 12:00' AT TIME ZONE 'Asia/Tokyo');
SELECT timezone('Europe/Paris', timestamptz '2024-07-01 12:00:00+00'), timestamptz '2024-07-01 12:00:00+00' AT TIME ZONE '+05', timestamptz '2024-07-01 12:00:00+00' AT TIME ZONE INTERVAL '+05:00';
SELECT timestamptz '2024-07-01 12:00:00+00' AT TIME ZONE 'Mars/Olympus';
-- make_timestamptz without and with a zone argument.
SELECT make_timestamptz(2024, 7, 1, 12, 0, 0), make_timestamptz(2024, 1, 1, 12, 0, 0), make_timestamptz(2024, 7, 1, 12, 0, 0, 'Asia/Tokyo');
SELECT make_date(2024, 2, 29), make_date(-44, 3, 15), make_time(12, 30, 15.5), make_timestamp(2024, 7, 1, 23, 59, 59.25);
SELECT make_date(2023, 2, 30);
SELECT make_time(24, 0, 1);
-- JSON renders timestamptz in the session zone.
SELECT to_json(t), json_build_object('id', id, 't', t), to_jsonb(t) FROM tzt WHERE id IN (1, 2) ORDER BY id;
SET TimeZone = 'Asia/Kolkata';
SELECT to_json(t), json_build_object('t', t) FROM tzt WHERE id = 1;
SELECT json_agg(t ORDER BY id) FROM tzt WHERE id IN (1, 5);
-- Clean up.
DROP TABLE tzt;
DROP TABLE local_in;
SET TimeZone = 'UTC';
SHOW TimeZone;
