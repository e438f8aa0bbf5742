-- unnest in FROM and in the select list, of array literals, casts as client-side binding
-- writes them (Django's bulk_create), ARRAY[...] and arrays of a row's values (LATERAL).
SELECT * FROM UNNEST(('{a,"b c",NULL}')::varchar(100)[], ('{1,2,3}'::int2[])::integer[]);
SELECT * FROM unnest('{1,2}'::int[], '{x,y,z}'::text[]) WITH ORDINALITY;
SELECT * FROM unnest('{1,2}'::int[], '{x,y,z}'::text[]) AS t(n, s);
SELECT u FROM unnest(ARRAY[3,1,2]) AS u ORDER BY u;
SELECT unnest(ARRAY['a','b']) AS x;
SELECT unnest('{10,20}'::bigint[]) + 1 AS y;
SELECT * FROM unnest(NULL::int[]);
SELECT * FROM unnest('{}'::int[]);
SELECT * FROM unnest(ARRAY[1.5, 2]) AS t(v);
SELECT * FROM unnest('{2024-01-02,2024-03-04}'::date[]) AS d;
SELECT * FROM unnest(1);
CREATE TABLE un_t (id int PRIMARY KEY, name varchar(20), n int);
INSERT INTO un_t (id, name, n) SELECT * FROM UNNEST('{1,2,3}'::int[], ('{a,b,c}')::varchar(20)[], ('{1,2,3}')::integer[]) RETURNING id, name, n;
SELECT t.name, x FROM un_t t, unnest(ARRAY[t.n, t.n * 10]) AS x ORDER BY 1, 2;
SELECT id FROM un_t WHERE id = ANY(('{1,3}'::int2[])::int[]) ORDER BY id;
DROP TABLE un_t;
