-- to_char of timestamps, timestamptz and dates (3,600 random patterns and moments agreed
-- with PostgreSQL 15 when it was written); numbers and intervals are refused for now.
SELECT to_char(timestamp '2024-03-05 14:07:09.123456', 'YYYY-MM-DD HH24:MI:SS.US');
SELECT to_char(timestamp '2024-03-05 14:07:09.123456', 'Day, DD Month YYYY HH12:MI AM');
SELECT to_char(timestamp '2024-03-05 14:07:09', 'FMDay, FMDDth FMMonth YYYY'), to_char(timestamp '2024-03-05 14:07:09', 'DY dy Dy MON mon Mon');
SELECT to_char(date '2024-12-30', 'IYYY-IW-ID IDDD'), to_char(date '2024-12-30', 'YYYY WW W DDD D Q CC J RM rm');
SELECT to_char(timestamptz '2024-07-01 00:00:00+00', 'YYYY-MM-DD"T"HH24:MI:SSOF TZ tz TZH:TZM');
SELECT to_char(timestamp '2024-07-01 23:59:59', 'HH HH12 HH24 a.m. P.M. SSSS SSSSS MS');
SELECT to_char(date '0044-03-15' - 1000000, 'YYYY-MM-DD BC B.C. ad'), to_char(date '0001-01-01', 'Y,YYY YYY YY Y AD');
SELECT to_char(timestamp '2024-01-01 00:00:00', '"quoted YYYY" \"YYYY\" FMHH12FM'), to_char(timestamp '2024-01-01', 'FMFMHH12');
SELECT to_char(date '2024-02-29', 'DDTH ddth MMth FMDDTH'), to_char(date '2024-02-01', 'DDth'), to_char(date '2024-02-02', 'DDth'), to_char(date '2024-02-03', 'DDth'), to_char(date '2024-02-11', 'DDth');
CREATE TABLE tc (id int PRIMARY KEY, at timestamptz);
INSERT INTO tc VALUES (1, '2024-05-06 07:08:09+00'), (2, NULL);
SELECT id, to_char(at, 'YYYY-MM-DD HH24:MI') FROM tc ORDER BY id;
SELECT to_char(now(), 'YYYY') = extract(year FROM now())::text;
DROP TABLE tc;
