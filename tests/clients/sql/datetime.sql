-- Dates and timestamps with and without time zone (the session's TimeZone is UTC).
CREATE TABLE ev (id int PRIMARY KEY, d date, ts timestamp, tz timestamptz, made timestamp with time zone DEFAULT now());
INSERT INTO ev (id, d, ts, tz) VALUES
  (1, '2024-02-29', '2024-02-29 10:00:00', '2024-02-29 10:00:00+02'),
  (2, DATE '2023-12-31', '2023-12-31 23:59:59.5', '2023-12-31 23:59:59.5Z'),
  (3, '0044-03-15 BC', '0044-03-15 12:00:00 BC', '2024-06-01T00:30:00-05:30'),
  (4, NULL, NULL, NULL);
SELECT id, d, ts, tz FROM ev ORDER BY id;
SELECT id, pg_typeof(d), pg_typeof(ts), pg_typeof(tz), pg_typeof(made) FROM ev WHERE id = 1;
SELECT pg_typeof(now()), pg_typeof(current_date), pg_typeof(localtimestamp), pg_typeof(current_timestamp);
SELECT count(*) FROM ev WHERE made <= now() AND made::date = current_date;
-- Arithmetic: days on dates, the difference of two dates.
SELECT id, d + 1 AS next, d - 1 AS prev, 7 + d AS week_on, d - DATE '2024-01-01' AS since FROM ev WHERE id < 3 ORDER BY id;
SELECT DATE '2024-03-01' - DATE '2023-03-01' AS leap_year, DATE '2024-12-31' + 1 AS new_year;
-- Casts among them and to text.
SELECT id, d::timestamp, d::timestamptz, tz::date, ts::timestamptz, tz::timestamp, d::text, tz::text FROM ev WHERE id < 3 ORDER BY id;
SELECT '2024-05-01 10:00:00+03'::timestamptz AS moved, '2024-05-01 10:00:00+03'::timestamp AS kept, '2024-05-01 23:00'::date AS day;
SELECT CAST('2024-01-02' AS date), CAST('2024-01-02 03:04:05.678' AS timestamp with time zone);
-- Comparisons across the three types, and with literals.
SELECT id FROM ev WHERE d < ts ORDER BY id;
SELECT id FROM ev WHERE d = '2024-02-29';
SELECT id FROM ev WHERE tz > '2024-01-01 00:00:00+05' ORDER BY id;
SELECT id FROM ev WHERE ts = tz ORDER BY id;
SELECT id FROM ev WHERE d BETWEEN '2023-01-01' AND '2024-12-31' ORDER BY id;
SELECT min(d), max(d), min(tz), max(ts) FROM ev;
SELECT d, count(*) FROM ev GROUP BY d ORDER BY d;
SELECT id, d FROM ev ORDER BY d DESC NULLS LAST, id;
-- extract, date_part, date_trunc.
SELECT extract(year FROM d) AS y, extract(month FROM d) AS m, extract(day FROM d) AS dd, extract(dow FROM d) AS dow, extract(doy FROM d) AS doy FROM ev WHERE id < 4 ORDER BY id;
SELECT extract(hour FROM ts), extract(minute FROM ts), extract(second FROM ts), extract(epoch FROM tz), extract(isodow FROM tz), extract(week FROM tz) FROM ev WHERE id < 3 ORDER BY id;
SELECT EXTRACT(CENTURY FROM TIMESTAMP '2000-12-16 12:21:13'), EXTRACT(MILLENNIUM FROM TIMESTAMP '2001-02-16 20:38:40'), EXTRACT(DECADE FROM TIMESTAMP '2001-02-16 20:38:40'), EXTRACT(QUARTER FROM TIMESTAMP '2001-02-16 20:38:40'), EXTRACT(ISOYEAR FROM DATE '2006-01-01');
SELECT date_part('year', d), date_part('hour', ts), date_part('epoch', tz), date_part('milliseconds', ts) FROM ev WHERE id < 3 ORDER BY id;
SELECT date_trunc('month', ts), date_trunc('hour', tz), date_trunc('week', ts), date_trunc('year', d), date_trunc('quarter', tz) FROM ev WHERE id < 3 ORDER BY id;
SELECT date_trunc('day', TIMESTAMP '2024-08-14 13:45:05.123456'), date_trunc('milliseconds', TIMESTAMP '2024-08-14 13:45:05.123456'), date_trunc('decade', TIMESTAMP '2024-08-14'), date_trunc('century', TIMESTAMP '2000-08-14');
SELECT d, count(*) FROM ev WHERE d IS NOT NULL GROUP BY date_trunc('year', d), d ORDER BY d;
-- An index on a date column, and range reads through it.
CREATE TABLE days (k int PRIMARY KEY, day date NOT NULL, at timestamptz NOT NULL);
CREATE INDEX days_day ON days (day);
INSERT INTO days SELECT g, DATE '2024-01-01' + g, (DATE '2024-01-01' + g / 2)::timestamptz FROM generate_series(0, 99) AS g;
SELECT count(*) FROM days WHERE day >= '2024-02-01' AND day < '2024-03-01';
SELECT k, day, at FROM days WHERE day = '2024-04-09';
SELECT extract(month FROM day) AS month, count(*) FROM days GROUP BY 1 ORDER BY 1;
UPDATE days SET day = day + 365 WHERE k = 5;
SELECT day FROM days WHERE k = 5;
DELETE FROM days WHERE day > '2024-04-01';
SELECT count(*), max(day) FROM days;
-- Errors as PostgreSQL gives them.
SELECT '2024-13-01'::date;
SELECT '2023-02-29'::date;
SELECT 'tomorrowish'::timestamptz;
SELECT DATE 'not a date';
INSERT INTO ev (id, d) VALUES (9, '2024-02-30');
SELECT extract(fortnight FROM ts) FROM ev WHERE id = 1;
SELECT date_trunc('fortnight', ts) FROM ev WHERE id = 1;
SELECT extract(hour FROM d) FROM ev WHERE id = 1;
SELECT d + d FROM ev WHERE id = 1;
DROP TABLE days;
DROP TABLE ev;
