-- to_char of intervals: their fields, as PostgreSQL 15 writes them.
select '['||to_char(interval '1 year 2 months 3 days 04:05:06.789', 'YYYY-MM-DD HH24:MI:SS.MS US')||']';
select '['||to_char(interval '36 hours 5 minutes', 'HH HH12 HH24 MI SS AM am')||']';
select '['||to_char(interval '0', 'HH:MI:SS YYYY MM DD DDD YY')||']';
select '['||to_char(interval '-3 days -04:05:06', 'DD HH24:MI:SS')||']';
select '['||to_char(interval '-1 year -2 months', 'YYYY MM')||']';
select '['||to_char(interval '2 months 40 days', 'DDD WW DD')||']';
select '['||to_char(interval '25:30:15', 'SSSS SSSSS FMHH24 FMMI')||']';
select '['||to_char(interval '3 days', 'FMDDth DDTH')||']';
select '['||to_char(interval '5 hours', 'CC Q')||']', '['||to_char(interval '15 months 5 days 13:00', 'CC Q WW DDD A.M. YYY Y')||']', '['||to_char(interval '-15 months', 'Q WW DDD MM')||']';
select '['||to_char(interval '-36:00:00.5', 'HH HH12 HH24 MI SS MS US SSSS PM FMHH24')||']', '['||to_char(interval '1 day 2 hours', '"days:" DD, HH24" h"')||']';
select to_char(interval '1 day', 'Day');
select to_char(interval '1 day', 'Month');
select to_char(interval '1 day', 'TZ');
select to_char(interval '1 day', 'AD');
select to_char(interval '1 day', 'D');
select to_char(null::interval, 'HH');
