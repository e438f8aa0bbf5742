-- interval: input forms, PostgreSQL's output style, comparison, arithmetic with
-- timestamps, dates and numbers, extract, and a column with an index.
SELECT '1 day'::interval, '-1 day'::interval, '1 year 2 months 3 days 04:05:06'::interval;
SELECT '1.5 hours'::interval, '1.5 days'::interval, '1.5 months'::interval, '90 minutes'::interval;
SELECT '-1 day 01:00:00'::interval, '1 day -01:00:00'::interval, '-1 mon 2 days'::interval, '-2 years -3 mons'::interval;
SELECT '2 weeks'::interval, '1 day ago'::interval, '@ 3 hours'::interval, 'P1Y2M3DT4H5M6S'::interval, '0'::interval;
SELECT INTERVAL '1 day', INTERVAL '3' HOUR, interval '10 secs', '1.25 seconds'::interval;
SELECT '1 mon'::interval = '30 days'::interval, '1 day'::interval < '25 hours'::interval, '-1 day'::interval < '0'::interval;
SELECT TIMESTAMP '2024-01-31 10:00:00' + INTERVAL '1 month', TIMESTAMP '2024-01-31 10:00:00' - INTERVAL '1 day 2 hours';
SELECT TIMESTAMPTZ '2024-03-01 00:00:00+00' - INTERVAL '1 day', INTERVAL '2 hours' + TIMESTAMP '2024-01-01 00:00:00';
SELECT DATE '2024-02-28' + INTERVAL '1 day', DATE '2024-03-01' - INTERVAL '1 hour', INTERVAL '1 week' + DATE '2024-01-01';
SELECT TIMESTAMP '2024-01-31 10:00' - TIMESTAMP '2024-01-30 09:00', TIMESTAMP '2024-01-30 09:00' - TIMESTAMP '2024-01-31 10:00';
SELECT INTERVAL '1 day' + INTERVAL '2 hours', INTERVAL '1 day' - INTERVAL '2 hours', -INTERVAL '1 day 02:00:00';
SELECT INTERVAL '1 mon 1 day' * 1.5, 2 * INTERVAL '3 hours', INTERVAL '1 day' / 4, INTERVAL '1 hour' * 0.5;
SELECT extract(epoch FROM INTERVAL '1 day 2 hours'), extract(hour FROM INTERVAL '1 day 2 hours 3 minutes'), extract(day FROM INTERVAL '40 days');
SELECT date_part('month', INTERVAL '1 year 5 mons'), date_part('year', INTERVAL '30 months'), extract(minute FROM INTERVAL '90 minutes');
SELECT INTERVAL '1 day' / 0;
SELECT 'abc'::interval;
CREATE TABLE iv (id int PRIMARY KEY, d interval, at timestamp);
INSERT INTO iv VALUES (1, '1 day', '2024-01-01 00:00'), (2, '36 hours', '2024-01-02 00:00'), (3, '1 mon', '2024-01-03 00:00'), (4, NULL, NULL);
CREATE INDEX iv_d ON iv (d);
SELECT id, d, at + d AS due FROM iv ORDER BY d NULLS LAST, id;
SELECT id FROM iv WHERE d = '30 days';
SELECT id FROM iv WHERE at + d > TIMESTAMP '2024-01-03 00:00' ORDER BY id;
SELECT sum(extract(epoch FROM d)) FROM iv;
SELECT pg_typeof(d), pg_typeof(at - at) FROM iv WHERE id = 1;
\d iv
DROP TABLE iv;
-- date_trunc of intervals, and fractions of a microsecond and ms/us units in interval text.
SELECT date_trunc('hour', interval '1 day 25:59:59.5'), date_trunc('year', interval '3 years 14 months 5 days'), date_trunc('decade', interval '-15 years 2 months');
SELECT date_trunc('century', interval '250 years'), date_trunc('millennium', interval '2500 years'), date_trunc('quarter', interval '1 year 5 months 3 days');
SELECT date_trunc('milliseconds', interval '1.234567 seconds'), date_trunc('minute', interval '-1 hour -30 minutes -15 seconds'), date_trunc('second', interval '-1.5 seconds');
SELECT date_trunc('day', interval '3 days 04:05:06'), date_trunc('month', interval '1 year 2 months 3 days'), date_trunc('microseconds', interval '1.5 us');
SELECT date_trunc('week', interval '40 days');
SELECT date_trunc('dow', interval '1 day');
SELECT date_trunc('hour', i), pg_typeof(date_trunc('hour', i)) FROM (VALUES (interval '2 hours 30 minutes'), (NULL)) v(i);
SELECT interval '1.5 us', interval '2.5 us', interval '1.5 ms', interval '0.0000015 s', interval '3 msecs', interval '1.6 us', interval '-1.5 us', interval '-1.6 us', interval '0.5 days 0.7 us';
