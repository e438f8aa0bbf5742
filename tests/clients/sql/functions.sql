-- Scalar functions: text and math, over constants, columns and parameters, with
-- PostgreSQL's NULL handling, edge cases and errors.
CREATE TABLE ft (id INT PRIMARY KEY, s TEXT, x FLOAT8, n NUMERIC(10,2), b BIGINT);
INSERT INTO ft VALUES
  (1, 'Hello World', 2.0, 12.34, 255),
  (2, NULL, -1, -5.5, -1),
  (3, 'a,b,,c', 0, 0, 0),
  (4, 'héllo wörld', 0.5, 100.00, 4096),
  (5, '  padded  ', 1e10, 0.01, 9223372036854775807);

-- Text.
SELECT id, replace(s, 'l', 'L'), repeat(s, 2), reverse(s), initcap(s) FROM ft ORDER BY id;
SELECT id, lpad(s, 14, '*-'), rpad(s, 14), lpad(s, 3), rpad(s, 0, 'x'), lpad(s, 14, '') FROM ft ORDER BY id;
SELECT id, left(s, 3), right(s, 3), left(s, -3), right(s, -3), left(s, 0) FROM ft ORDER BY id;
SELECT id, ltrim(s), rtrim(s), btrim(s), btrim(s, ' a'), ltrim(s, 'Hhé'), rtrim(s, 'dl') FROM ft ORDER BY id;
SELECT id, split_part(s, ',', 1), split_part(s, ',', 3), split_part(s, ',', -1), split_part(s, ',', 9), split_part(s, '', 1) FROM ft ORDER BY id;
SELECT id, strpos(s, 'l'), strpos(s, ''), starts_with(s, 'He'), ascii(s), octet_length(s), length(s) FROM ft ORDER BY id;
SELECT id, translate(s, 'lo', '0'), md5(s), to_hex(id * 100), to_hex(b), concat_ws('|', id, s, NULL, x) FROM ft ORDER BY id;
SELECT replace('abcabc', 'bc', 'X'), replace('abc', '', 'X'), repeat('ab', 0), repeat('ab', -1), chr(65), chr(233), ascii(''), to_hex(-1), to_hex(-1::bigint);
SELECT md5(''), md5('The quick brown fox jumps over the lazy dog'), initcap('hi THERE o''neil 3rd-place'), concat_ws(NULL, 'a', 'b'), concat_ws(', ', NULL);
SELECT concat_ws(', ');
SELECT split_part('a.b.c', '.', -3), split_part('a.b.c', '.', -4), split_part('', ',', 1), split_part('abc', 'abc', 2);
SELECT id FROM ft WHERE starts_with(lower(s), 'h') AND strpos(s, 'o') > 0 ORDER BY id;
SELECT upper(left(s, 1)) || lower(substr(s, 2)) AS cap, count(*) FROM ft WHERE s IS NOT NULL GROUP BY 1 ORDER BY 1;

-- Math.
SELECT id, sqrt(abs(x)), cbrt(x), power(x, 2), power(2, id), exp(x / 10), ln(abs(x) + 1), log(abs(x) + 1) FROM ft ORDER BY id;
SELECT id, sign(x), sign(n), sign(id - 3), trunc(x), trunc(n), trunc(n, 1), trunc(n, 3), mod(id, 3), mod(n, 3), mod(b, 7) FROM ft ORDER BY id;
SELECT round(degrees(pi())), radians(180) = pi(), sin(0), cos(0), tan(0), asin(1) * 2 = pi(), acos(1), atan(0), atan2(0, 1), round(cot(1)::numeric, 6);
SELECT sqrt(2), power(2, 0.5::float8), power(-8, 3), power(0, 0), exp(0), ln(1), log(1000), pi();
SELECT mod(-7, 3), mod(7, -3), mod(7.5, 2), trunc(-2.7), trunc(2.7), sign(0.0), trunc(-0.5, 0);

-- Parameters take the types PostgreSQL infers for them.
PREPARE fp AS SELECT id, mod(id, $1), power($2, 2), lpad(s, $3, $4), split_part(s, ',', $5), sign($6) FROM ft ORDER BY id;
EXECUTE fp(2, 1.5, 6, '.', 2, -3);
DEALLOCATE fp;

-- Errors, as PostgreSQL gives them.
SELECT sqrt(x) FROM ft WHERE id = 2;
SELECT ln(x) FROM ft WHERE id = 3;
SELECT log(-1);
SELECT power(0, -1);
SELECT power(-8, 0.5::float8);
SELECT exp(1000);
SELECT power(10, 400);
SELECT asin(2);
SELECT split_part(s, ',', 0) FROM ft WHERE id = 3;
SELECT chr(0);
SELECT mod(id, 0) FROM ft WHERE id = 1;
SELECT replace(id, '1', '2') FROM ft;
SELECT repeat(s) FROM ft;
SELECT lpad(s, 'x') FROM ft;
SELECT mod(x, 2) FROM ft;
SELECT 1;
DROP TABLE ft;
