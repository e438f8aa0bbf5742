-- format(), quote_ident, quote_literal, quote_nullable.
SELECT format('Hello %s, %1$s', 'World'), format('INSERT INTO %I VALUES(%L)', 'Foo bar', E'O\'Reilly'), format('|%10s|%-10s|', 'a', 'b');
SELECT format('|%*s|', -4, 'a'), format('%s %L %%', NULL, NULL), format('%s and %s', 1, 2.50), format('%3$s %1$s %s', 'a', 'b', 'c');
SELECT format('%I', 'select'), format('%I', 'abc_1'), format('%I', 'Abc'), format('%L', E'a\\b'), format('%s', ARRAY[1,2]), format(NULL), format('%s', true);
SELECT quote_ident('order'), quote_ident('x y'), quote_literal(42), quote_literal(E'it''s'), quote_nullable(NULL), quote_nullable('a');
CREATE TABLE fm (id int PRIMARY KEY, name text);
INSERT INTO fm VALUES (1, 'x'), (2, NULL);
SELECT id, format('%s=%L', id, name), quote_nullable(name) FROM fm ORDER BY id;
SELECT format('%s');
SELECT format('%x', 1);
SELECT format('%I', NULL);
SELECT format('%0$s', 1);
SELECT format('abc %');
DROP TABLE fm;
