-- Window calls over more rows than work_mem holds (64 kB, PostgreSQL's least): Permafrost
-- sorts the rows on disk for each call and walks each partition streaming, through a file
-- of its own, or a slice at a time (crates/sql/src/exec/window_disk.rs). (Not every call
-- fits this work_mem: a slice of rows or a partition held past a quarter of it is 54000.)
CREATE TABLE ws (id INT PRIMARY KEY, g INT, x INT, pad TEXT);
INSERT INTO ws SELECT i, i % 4, (i * 37) % 101, 'pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp' || i
  FROM generate_series(1, 3000) AS s(i);
UPDATE ws SET x = NULL WHERE id % 17 = 0;
SET work_mem = '64kB';

-- Streaming: ranking, running aggregates over ROWS and RANGE frames.
SELECT id, row_number() OVER (ORDER BY x, id) AS rn, rank() OVER (PARTITION BY g ORDER BY x) AS rk,
       dense_rank() OVER (ORDER BY x DESC NULLS FIRST) AS dr,
       sum(x) OVER (PARTITION BY g ORDER BY id) AS running, count(x) OVER (ORDER BY x) AS upto,
       max(x) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS hi,
       first_value(id) OVER (PARTITION BY g ORDER BY x DESC, id) AS fv
  FROM ws ORDER BY id LIMIT 8;
SELECT id, row_number() OVER (ORDER BY id DESC) AS rn, pad FROM ws ORDER BY id DESC LIMIT 3;

-- Over the whole partition: the rows through a file, read back at its end.
SELECT id, count(*) OVER () AS n, sum(x) OVER (PARTITION BY g) AS total,
       ntile(7) OVER (ORDER BY id) AS tile, percent_rank() OVER (ORDER BY x) AS pr,
       cume_dist() OVER (PARTITION BY g ORDER BY x) AS cd, cume_dist() OVER () AS all_cd,
       last_value(id) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS lv
  FROM ws ORDER BY id DESC LIMIT 8;

-- A slice at a time: offsets, frames bounded on both sides, frames to the end.
SELECT id, lag(x) OVER (ORDER BY id) AS prev, lead(id, 3, -1) OVER (PARTITION BY g ORDER BY id) AS next3,
       sum(x) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS moving,
       count(*) OVER (ORDER BY id * 2 RANGE BETWEEN 3 PRECEDING AND 1 FOLLOWING) AS near,
       min(x) OVER (PARTITION BY g ORDER BY id / 8 GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) AS grp_min,
       count(*) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS rest,
       nth_value(id, 2) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 3 FOLLOWING) AS second
  FROM ws ORDER BY id LIMIT 6 OFFSET 1500;
SELECT g, id, lag(x) OVER (PARTITION BY g ORDER BY id) AS prev, x FROM ws ORDER BY g, id LIMIT 4 OFFSET 748;

-- A query of one subquery in FROM that is not pulled up reads the subquery's rows as
-- they come (top rows per group; a count over DISTINCT).
SELECT * FROM (SELECT g, id, x, rank() OVER (PARTITION BY g ORDER BY x DESC, id) AS r FROM ws) AS t
  WHERE r <= 2 ORDER BY g, r;
SELECT g, count(*), sum(prev) FROM (SELECT g, lag(x) OVER (PARTITION BY g ORDER BY id) AS prev FROM ws) AS s
  GROUP BY g ORDER BY g;
SELECT count(*) FROM (SELECT DISTINCT pad FROM ws) AS d;

RESET work_mem;
DROP TABLE ws;
