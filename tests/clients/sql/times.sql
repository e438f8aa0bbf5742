-- time (without time zone): input forms, output, comparison, arithmetic with dates and
-- intervals, extract, casts, and a column with an index.
SELECT '10:30'::time, '10:30:15.5'::time, '23:59:59.999999'::time, '24:00:00'::time, '2024-01-02 08:15:00'::time;
SELECT TIME '07:00' < TIME '07:00:01', TIME '12:00' = '12:00:00'::time;
SELECT DATE '2024-03-01' + TIME '10:30', TIME '10:30' + DATE '2024-03-01';
SELECT TIME '23:30' + INTERVAL '1 hour', TIME '01:00' - INTERVAL '2 hours', TIME '10:00' - TIME '08:30';
SELECT extract(hour FROM TIME '10:30:15'), extract(minute FROM TIME '10:30:15'), extract(second FROM TIME '10:30:15.25'), extract(epoch FROM TIME '01:00');
SELECT extract(day FROM TIME '10:30');
SELECT TIMESTAMP '2024-01-02 03:04:05.6'::time, TIME '10:30'::text;
SELECT '25:00'::time;
SELECT '10:61'::time;
CREATE TABLE tm (id int PRIMARY KEY, opens time, closes time);
INSERT INTO tm VALUES (1, '09:00', '17:30'), (2, '08:00', '12:00'), (3, '22:00', '02:00'), (4, NULL, NULL);
CREATE INDEX tm_opens ON tm (opens);
SELECT id, opens, closes, closes - opens AS span FROM tm ORDER BY opens NULLS LAST;
SELECT id FROM tm WHERE opens BETWEEN '08:00' AND '09:00' ORDER BY id;
SELECT id FROM tm WHERE opens = '22:00';
\d tm
DROP TABLE tm;
