-- make_interval by position and by name, as PostgreSQL builds it.
SELECT make_interval();
SELECT make_interval(1, 2, 3, 4, 5, 6, 7.5);
SELECT make_interval(days => 3);
SELECT make_interval(hours => 1, mins => 30);
SELECT make_interval(years => -1, secs => 0.0000005);
SELECT make_interval(secs => 0.0000015), make_interval(secs => 0.0000025);
SELECT make_interval(2, weeks => 1);
SELECT make_interval(weeks => NULL);
SELECT make_interval(secs => '1.25');
SELECT make_interval(nope => 1);
SELECT now() + make_interval(days => 0) = now();
